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
 * of the headers (a message id extractor still sees them on the raw message).
 */
export function fromMessageAttributes(
  attributes: Readonly<Record<string, MessageAttributeValue>> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!attributes) return out;
  for (const [name, value] of Object.entries(attributes)) {
    const type = value.DataType ?? '';
    if (
      (type.startsWith('String') || type.startsWith('Number')) &&
      value.StringValue !== undefined
    ) {
      out[name] = value.StringValue;
    }
  }
  return out;
}
