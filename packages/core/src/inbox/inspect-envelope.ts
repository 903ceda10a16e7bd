import type { JustonceError } from '../errors/justonce-error';
import type { DeadLetterReason } from '../dead-letters/types';
import { hasLoneSurrogate, jsonOf, textOf, unstorableText, unwritableText } from '../common/text';
import type { Envelope } from '../transport/envelope';
import { InvalidBodyError } from './errors/invalid-body-error';
import { InvalidHeadersError } from './errors/invalid-headers-error';
import { InvalidMessageIdError } from './errors/invalid-message-id-error';
import { InvalidScopeError } from './errors/invalid-scope-error';
import { MissingMessageIdError } from './errors/missing-message-id-error';
import { bodyBytes, fingerprint } from './fingerprint';
import { MAX_SCOPE_BYTES, type ResolvedInboxOptions } from './options';

/** What a delivery carries, read defensively from whatever the caller passed. @internal */
interface Carried {
  readonly envelope: Envelope;
  readonly scope: string;
  /** The headers as given when they are an object of strings; otherwise the raw value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  readonly bodyIsText: boolean;
  /** The body string itself when its UTF-8 bytes would not give it back (lone surrogates). */
  readonly inexactBody: string | undefined;
  readonly fingerprint: string;
}

/** An envelope the inbox can work with. @internal */
export interface GoodDelivery extends Carried {
  readonly ok: true;
  readonly messageId: string;
  /**
   * Set when the id and scope are usable but the headers or body are not: the message is
   * dead-lettered under its id (so a redelivery is acknowledged as already dead-lettered).
   */
  readonly inputError:
    { readonly reason: DeadLetterReason; readonly error: JustonceError } | undefined;
}

/** An envelope without a usable id or scope, with everything needed to dead-letter it. @internal */
export interface BadDelivery extends Carried {
  readonly ok: false;
  /** The id as delivered, as text; `null` when there was none. */
  readonly rawId: string | null;
  readonly reason: DeadLetterReason;
  readonly error: JustonceError;
}

function bodyOf(value: unknown): Pick<Carried, 'body' | 'bodyIsText' | 'inexactBody'> & {
  readonly problem: string | undefined;
} {
  if (typeof value === 'string') {
    const inexact = hasLoneSurrogate(value);
    return {
      body: bodyBytes(value),
      bodyIsText: true,
      inexactBody: inexact ? value : undefined,
      problem: inexact
        ? 'the body string has a lone UTF-16 surrogate, so it has no exact UTF-8 bytes'
        : undefined,
    };
  }
  if (value instanceof Uint8Array) {
    return { body: value, bodyIsText: false, inexactBody: undefined, problem: undefined };
  }
  return {
    body: bodyBytes(value === undefined ? 'undefined' : jsonOf(value)),
    bodyIsText: true,
    inexactBody: undefined,
    problem: `the body is a ${value === null ? 'null' : typeof value}, neither a Uint8Array nor a string`,
  };
}

/** Why `headers` is not an object of storable strings, or `undefined` when it is. */
function headersProblem(headers: unknown): string | undefined {
  if (headers === undefined || headers === null) return undefined;
  if (typeof headers !== 'object' || Array.isArray(headers) || headers instanceof Uint8Array) {
    return `headers must be an object of strings, got ${Array.isArray(headers) ? 'an array' : typeof headers}`;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') {
      return `header ${JSON.stringify(name)} has a ${value === null ? 'null' : typeof value} value, not a string`;
    }
    const problem = unwritableText(name) ?? unwritableText(value);
    if (problem !== undefined) return `header ${JSON.stringify(name)} ${problem}`;
  }
  return undefined;
}

/** Why `id` cannot be deduplicated on, or `undefined` when it can. */
function idProblem(id: string, maxIdLength: number): string | undefined {
  if (id === '') return 'the message id is empty';
  const bytes = Buffer.byteLength(id);
  if (bytes > maxIdLength) {
    return `the message id is ${bytes} bytes long; the limit is ${maxIdLength}`;
  }
  const problem = unstorableText(id);
  return problem === undefined ? undefined : `the message id ${problem}`;
}

function scopeProblem(scope: unknown): string | undefined {
  if (typeof scope !== 'string' || scope === '' || Buffer.byteLength(scope) > MAX_SCOPE_BYTES) {
    return `the scope must be a non-empty string of at most ${MAX_SCOPE_BYTES} bytes`;
  }
  const problem = unstorableText(scope);
  return problem === undefined ? undefined : `the scope ${problem}`;
}

/**
 * Checks what a transport handed over. Never throws: anything unusable comes back as a
 * {@link BadDelivery} (no usable id or scope) or a {@link GoodDelivery} with an
 * `inputError` (unusable headers or body), keeping everything for the dead letter. Text the
 * store cannot hold exactly (U+0000, lone surrogates) is refused here rather than reaching
 * SQL, where it would fail every delivery. @internal
 */
export function inspectEnvelope(
  envelope: Envelope,
  options: ResolvedInboxOptions,
): GoodDelivery | BadDelivery {
  const headersError = headersProblem(envelope.headers);
  const headers = (envelope.headers ?? {}) as Readonly<Record<string, string>>;
  const { problem: bodyError, ...body } = bodyOf(envelope.body);
  const rawScope: unknown = envelope.scope ?? options.defaultScope;
  const carried: Carried = {
    envelope,
    scope: typeof rawScope === 'string' ? rawScope : textOf(rawScope),
    headers,
    ...body,
    fingerprint: fingerprint(
      body.body,
      typeof headers === 'object' ? headers : {},
      options.fingerprintHeaders,
    ),
  };
  const id: unknown = envelope.id;
  const bad = (reason: DeadLetterReason, error: JustonceError): BadDelivery => ({
    ...carried,
    ok: false,
    rawId: id === undefined || id === null ? null : textOf(id),
    reason,
    error,
  });

  if (id === undefined || id === null) {
    return bad('MISSING_MESSAGE_ID', new MissingMessageIdError({ consumer: options.consumer }));
  }
  if (typeof id !== 'string') {
    return bad(
      'INVALID_MESSAGE_ID',
      new InvalidMessageIdError('the message id must be a non-empty string', { type: typeof id }),
    );
  }
  const badId = idProblem(id, options.maxIdLength);
  if (badId !== undefined) {
    return bad(
      'INVALID_MESSAGE_ID',
      new InvalidMessageIdError(badId, {
        bytes: Buffer.byteLength(id),
        maxIdLength: options.maxIdLength,
      }),
    );
  }
  const badScope = scopeProblem(rawScope);
  if (badScope !== undefined) {
    return bad('INVALID_SCOPE', new InvalidScopeError(badScope, { type: typeof rawScope }));
  }
  const inputError =
    headersError !== undefined
      ? { reason: 'INVALID_HEADERS' as const, error: new InvalidHeadersError(headersError) }
      : bodyError !== undefined
        ? { reason: 'INVALID_BODY' as const, error: new InvalidBodyError(bodyError) }
        : undefined;
  return { ...carried, ok: true, messageId: id, inputError };
}
