import type { JustonceError } from '../errors/justonce-error';
import type { DeadLetterReason } from '../dead-letters/types';
import type { Envelope } from '../transport/envelope';
import { InvalidBodyError } from './errors/invalid-body-error';
import { InvalidMessageIdError } from './errors/invalid-message-id-error';
import { InvalidScopeError } from './errors/invalid-scope-error';
import { MissingMessageIdError } from './errors/missing-message-id-error';
import { bodyBytes, fingerprint } from './fingerprint';
import { MAX_SCOPE_BYTES, type ResolvedInboxOptions } from './options';

/** An envelope the inbox can work with. @internal */
export interface GoodDelivery {
  readonly ok: true;
  readonly envelope: Envelope;
  readonly messageId: string;
  readonly scope: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  readonly bodyIsText: boolean;
  readonly fingerprint: string;
  /** Set when the body is neither bytes nor a string (it is kept as JSON text). */
  readonly bodyError: JustonceError | undefined;
}

/** An envelope that is bad input, with everything needed to dead-letter it. @internal */
export interface BadDelivery {
  readonly ok: false;
  readonly envelope: Envelope;
  /** The id as delivered, as text; `null` when there was none. */
  readonly rawId: string | null;
  readonly scope: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  readonly bodyIsText: boolean;
  readonly fingerprint: string;
  readonly reason: DeadLetterReason;
  readonly error: JustonceError;
}

function stringHeaders(value: unknown): Readonly<Record<string, string>> {
  if (typeof value !== 'object' || value === null) return {};
  return value as Readonly<Record<string, string>>;
}

function bodyOf(value: unknown): { body: Uint8Array; bodyIsText: boolean; valid: boolean } {
  if (typeof value === 'string') return { body: bodyBytes(value), bodyIsText: true, valid: true };
  if (value instanceof Uint8Array) return { body: value, bodyIsText: false, valid: true };
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return { body: bodyBytes(text), bodyIsText: true, valid: false };
}

/**
 * Checks what a transport handed over. Never throws: anything unusable comes back as a
 * {@link BadDelivery} that keeps the body and headers for the dead letter. @internal
 */
export function inspectEnvelope(
  envelope: Envelope,
  options: ResolvedInboxOptions,
): GoodDelivery | BadDelivery {
  const input = (typeof envelope === 'object' && envelope !== null ? envelope : {}) as Partial<
    Record<keyof Envelope, unknown>
  >;
  const headers = stringHeaders(input.headers);
  const { body, bodyIsText, valid: bodyValid } = bodyOf(input.body);
  const print = fingerprint(body, headers, options.fingerprintHeaders);
  const rawScope = input.scope ?? options.defaultScope;
  const scope = typeof rawScope === 'string' ? rawScope : String(rawScope);
  const id = input.id;
  const rawId = id === undefined || id === null ? null : String(id);
  const bad = (reason: DeadLetterReason, error: JustonceError): BadDelivery => ({
    ok: false,
    envelope,
    rawId,
    scope,
    headers,
    body,
    bodyIsText,
    fingerprint: print,
    reason,
    error,
  });

  if (id === undefined || id === null) {
    return bad('MISSING_MESSAGE_ID', new MissingMessageIdError({ consumer: options.consumer }));
  }
  if (typeof id !== 'string' || id === '') {
    return bad(
      'INVALID_MESSAGE_ID',
      new InvalidMessageIdError('the message id must be a non-empty string', {
        type: typeof id,
      }),
    );
  }
  const idBytes = Buffer.byteLength(id);
  if (idBytes > options.maxIdLength) {
    return bad(
      'INVALID_MESSAGE_ID',
      new InvalidMessageIdError(
        `the message id is ${idBytes} bytes long; the limit is ${options.maxIdLength}`,
        { length: idBytes, maxIdLength: options.maxIdLength },
      ),
    );
  }
  if (
    typeof rawScope !== 'string' ||
    rawScope === '' ||
    Buffer.byteLength(rawScope) > MAX_SCOPE_BYTES
  ) {
    return bad(
      'INVALID_SCOPE',
      new InvalidScopeError(
        `the scope must be a non-empty string of at most ${MAX_SCOPE_BYTES} bytes`,
        { type: typeof rawScope },
      ),
    );
  }
  return {
    ok: true,
    envelope,
    messageId: id,
    scope,
    headers,
    body,
    bodyIsText,
    fingerprint: print,
    bodyError: bodyValid ? undefined : new InvalidBodyError({ type: typeof input.body }),
  };
}
