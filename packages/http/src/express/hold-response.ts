import type { ServerResponse } from 'node:http';
import { headerPairs, type HeldResponse } from '../engine/response';

/** The response methods a handler writes through, which a hold intercepts. */
const HELD_METHODS = ['writeHead', 'write', 'end', 'flushHeaders'] as const;
type HeldMethod = (typeof HELD_METHODS)[number];

/** A Node response whose writes are held in memory until the engine says what to send. */
export interface ResponseHold {
  /**
   * Resolves when the handler ends the response; rejects when `signal` aborts first, or with
   * the error given to {@link ResponseHold.fail}.
   */
  until(signal: AbortSignal): Promise<HeldResponse>;
  /**
   * The handler threw `error` before it ended the response: `until` rejects with it. False
   * (and nothing happens) once the response was ended.
   */
  fail(error: unknown): boolean;
  /** Sends the held response as the handler wrote it, then runs the handler's callbacks. */
  release(): void;
  /** Gives the response back unsent, without the headers the handler set, for an error. */
  discard(): void;
}

/**
 * Holds the writes to `res` (`writeHead`, `write`, `end`, `flushHeaders`; Express's
 * `res.send` and `res.json` end in `end`) in memory: nothing reaches the socket until
 * {@link ResponseHold.release}. Headers set with `setHeader` stay on `res` as usual and are
 * read when the handler calls `end`.
 */
export function holdResponse(res: ServerResponse): ResponseHold {
  const saved = HELD_METHODS.map((name) => ({
    name,
    own: Object.prototype.hasOwnProperty.call(res, name),
    value: res[name],
  }));
  const chunks: Buffer[] = [];
  const callbacks: (() => void)[] = [];
  let settle: { resolve(response: HeldResponse): void; reject(error: unknown): void } | undefined;
  let ended: HeldResponse | undefined;
  let failed: { readonly error: unknown } | undefined;

  const intercept = (name: HeldMethod, value: (...args: unknown[]) => unknown): void => {
    Object.defineProperty(res, name, { value, configurable: true, writable: true });
  };
  intercept('writeHead', (status, ...rest) => {
    if (typeof status === 'number') res.statusCode = status;
    const headers = rest.find((item) => typeof item === 'object' && item !== null);
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2)
        res.setHeader(`${headers[i]}`, `${headers[i + 1]}`);
    } else if (headers !== undefined) {
      for (const [name, value] of Object.entries(headers)) {
        if (value !== undefined) res.setHeader(name, value as string | number | readonly string[]);
      }
    }
    return res;
  });
  intercept('write', (chunk, encoding, callback) => {
    collect(chunks, chunk, encoding);
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') callbacks.push(done as () => void);
    return true;
  });
  intercept('end', (chunk, encoding, callback) => {
    if (typeof chunk === 'function') callbacks.push(chunk as () => void);
    else collect(chunks, chunk, encoding);
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') callbacks.push(done as () => void);
    if (ended === undefined && failed === undefined) {
      ended = {
        status: res.statusCode,
        headers: headerPairs(res.getHeaders()),
        body: Buffer.concat(chunks),
      };
      settle?.resolve(ended);
    }
    return res;
  });
  intercept('flushHeaders', () => undefined);

  const restore = (): void => {
    for (const method of saved) {
      if (method.own)
        Object.defineProperty(res, method.name, {
          value: method.value,
          configurable: true,
          writable: true,
        });
      else Reflect.deleteProperty(res, method.name);
    }
  };

  return {
    until: (signal) =>
      new Promise<HeldResponse>((resolve, reject) => {
        if (ended !== undefined) return resolve(ended);
        if (failed !== undefined) return reject(failed.error);
        settle = { resolve, reject };
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      }),
    fail(error) {
      if (ended !== undefined || failed !== undefined) return false;
      failed = { error };
      settle?.reject(error);
      return true;
    },
    release() {
      restore();
      res.end(Buffer.concat(chunks), () => {
        for (const callback of callbacks) callback();
      });
    },
    discard() {
      restore();
      for (const name of res.getHeaderNames()) res.removeHeader(name);
    },
  };
}

/** Appends one written chunk, as `write` and `end` take it (a string with an encoding, or bytes). */
function collect(chunks: Buffer[], chunk: unknown, encoding: unknown): void {
  if (chunk === undefined || chunk === null) return;
  if (typeof chunk === 'string') {
    chunks.push(
      Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'),
    );
  } else if (chunk instanceof Uint8Array) {
    chunks.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer
  }
}
