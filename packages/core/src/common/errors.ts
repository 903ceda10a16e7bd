import { storableDiagnostic, textOf } from './text';

/**
 * Longest error text kept anywhere: a stored attempt's or operation's error message, an
 * outbox row's `last_error`, a dead letter's error, a header that carries one. Longer text is
 * cut here, so a broker's message quoting a whole payload does not bloat a row or a header.
 */
export const ERROR_TEXT_LIMIT = 1_000;

/**
 * Whatever was thrown, as an `Error`: an `Error` as it is, a string as the message, anything
 * else as its text, kept as `cause`. Never throws.
 */
export function asError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : textOf(value), { cause: value });
}

/** The message of whatever was thrown: an `Error`'s message, else the value as text. Never throws. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return textOf(error.message);
  return textOf(error);
}

/**
 * Error text as it may be stored or sent: the message of `error` (or `error` itself when it is
 * text) cut to `max` characters, never in the middle of a surrogate pair, with U+0000 and lone
 * surrogates made storable.
 */
export function errorText(error: unknown, max: number = ERROR_TEXT_LIMIT): string {
  const text = typeof error === 'string' ? error : errorMessage(error);
  let cut = text.length > max ? text.slice(0, max) : text;
  const last = cut.charCodeAt(cut.length - 1);
  if (cut.length < text.length && last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return storableDiagnostic(cut);
}
