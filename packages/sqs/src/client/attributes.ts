import type { MessageAttributeValue } from '@aws-sdk/client-sqs';

/** SQS allows at most this many message attributes on one message. */
export const MAX_MESSAGE_ATTRIBUTES = 10;

/** Longest message attribute name SQS accepts. */
const MAX_ATTRIBUTE_NAME_LENGTH = 256;
const ATTRIBUTE_NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * Why SQS would refuse `name` as a message attribute name, or `undefined` when it is fine:
 * 1–256 of `A-Z a-z 0-9 _ - .`, no leading or trailing period, no `..`, and no `AWS.` or
 * `Amazon.` prefix (any case).
 */
export function attributeNameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > MAX_ATTRIBUTE_NAME_LENGTH) {
    return `must be 1-${MAX_ATTRIBUTE_NAME_LENGTH} characters`;
  }
  if (!ATTRIBUTE_NAME.test(name)) return 'may only hold A-Z a-z 0-9 _ - .';
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..')) {
    return 'may not start or end with a period or hold two in a row';
  }
  const lower = name.toLowerCase();
  if (lower.startsWith('aws.') || lower.startsWith('amazon.')) {
    return 'may not start with AWS. or Amazon. (reserved)';
  }
  return undefined;
}

/** String message attributes for `headers` (names and values must be valid already). */
export function toMessageAttributes(
  headers: Readonly<Record<string, string>>,
): Record<string, MessageAttributeValue> {
  const out: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = { DataType: 'String', StringValue: value };
  }
  return out;
}

/**
 * Headers from received message attributes: `String` and `Number` attributes (custom type
 * suffixes such as `String.json` included) become strings; `Binary` attributes are left out
 * of the headers (a message id extractor still sees them on the raw message). Never throws:
 * an attribute that is not shaped like one (no string `DataType` or `StringValue`) is left
 * out, and every name, `__proto__` included, becomes an own property.
 */
export function fromMessageAttributes(
  attributes: Readonly<Record<string, MessageAttributeValue>> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof attributes !== 'object' || attributes === null) return out;
  for (const [name, value] of Object.entries(attributes as Record<string, unknown>)) {
    const text = attributeText(value);
    if (text !== undefined) setHeader(out, name, text);
  }
  return out;
}

/** The text of a `String` or `Number` attribute, else `undefined`. */
function attributeText(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { DataType: type, StringValue: text } = value as Record<string, unknown>;
  if (typeof type !== 'string' || typeof text !== 'string') return undefined;
  return type.startsWith('String') || type.startsWith('Number') ? text : undefined;
}

/** Sets `headers[name]` as an own property: assigning to `__proto__` would drop it. */
function setHeader(headers: Record<string, string>, name: string, value: string): void {
  Object.defineProperty(headers, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/**
 * `headers[name]` when it is the message's own header, so a name such as `constructor` or
 * `toString` never finds what `Object.prototype` holds. @internal
 */
export function headerOf(
  headers: Readonly<Record<string, string>>,
  name: string,
): string | undefined {
  return Object.hasOwn(headers, name) ? headers[name] : undefined;
}
