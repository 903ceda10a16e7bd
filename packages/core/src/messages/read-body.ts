import { InvalidPayloadError } from './errors/invalid-payload-error';

/** Decodes bytes as UTF-8, refusing malformed sequences instead of replacing them. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Where a JSON syntax error is, when the engine's message says, without quoting the body. */
function positionOf(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const at = /position (\d+)/.exec(message);
  return at ? ` (at position ${at[1]})` : '';
}

/**
 * The value a typed message carries, from what the inbox hands its handler as `ctx.payload`.
 * Bytes and strings are the body as delivered (or what a `decode` option turned it into,
 * such as decompressed bytes) and are parsed as UTF-8 JSON; any other value is what a
 * `decode` option already parsed, and is taken as it is. Not JSON (or not UTF-8) → an
 * {@link InvalidPayloadError} for `messageType`. The error never quotes the body: it may be
 * anything, and error messages reach logs. @internal
 */
export function readPayload(source: unknown, messageType: string): unknown {
  if (!(source instanceof Uint8Array) && typeof source !== 'string') return source;
  let text: string;
  try {
    text = typeof source === 'string' ? source : UTF8.decode(source);
  } catch (cause) {
    throw new InvalidPayloadError(
      messageType,
      [{ message: 'the body is not valid UTF-8', path: [] }],
      { cause },
    );
  }
  try {
    const value: unknown = JSON.parse(text);
    return value;
  } catch (cause) {
    throw new InvalidPayloadError(
      messageType,
      [{ message: `the body is not valid JSON${positionOf(cause)}`, path: [] }],
      { cause },
    );
  }
}
