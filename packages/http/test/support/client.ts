/** Real HTTP requests to the test servers: fetch, and node:http for repeated header lines. */
import { request as httpRequest } from 'node:http';

/** What a test sends to `POST /orders`. */
export interface OrderCall {
  /** The Idempotency-Key field value as sent (quote it for the sf-string form). */
  readonly key?: string;
  /** The client, sent as `x-client-id`. Default `client-a`. `null` sends none. */
  readonly client?: string | null;
  /** A JSON body (default), or raw text with `contentType`. */
  readonly body?: unknown;
  readonly text?: string;
  readonly contentType?: string;
  /** Appended to `/orders`, e.g. `?x=1`. */
  readonly query?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A response as received: status, headers, exact body bytes. */
export interface Received {
  readonly status: number;
  readonly headers: Headers;
  readonly bytes: Buffer;
  /** The body parsed as JSON (`undefined` when it is not JSON). */
  readonly json: unknown;
}

/** `"<key>"`: the key as a Structured Field string. */
export function sf(key: string): string {
  return `"${key.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

let counter = 0;
/** A fresh key for one test (UUID-like, so the bare form is a token too). */
export function freshKey(label = 'k'): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export async function postOrder(baseUrl: string, call: OrderCall = {}): Promise<Received> {
  const headers = new Headers(call.headers);
  if (call.key !== undefined) headers.set('idempotency-key', call.key);
  if (call.client !== null) headers.set('x-client-id', call.client ?? 'client-a');
  let body: string | undefined;
  if (call.text !== undefined) {
    body = call.text;
    headers.set('content-type', call.contentType ?? 'text/plain');
  } else if (call.body !== undefined) {
    body = JSON.stringify(call.body);
    headers.set('content-type', call.contentType ?? 'application/json');
  }
  const response = await fetch(`${baseUrl}/orders${call.query ?? ''}`, {
    method: 'POST',
    headers,
    body,
  });
  return received(response.status, response.headers, Buffer.from(await response.arrayBuffer()));
}

/** A POST whose `Idempotency-Key` goes as several field lines, which fetch would join. */
export function postWithKeyLines(
  baseUrl: string,
  lines: readonly string[],
  body: unknown,
): Promise<Received> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${baseUrl}/orders`,
      {
        method: 'POST',
        headers: {
          'idempotency-key': [...lines],
          'x-client-id': 'client-a',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === 'string') headers.set(name, value);
          }
          resolve(received(res.statusCode ?? 0, headers, Buffer.concat(chunks)));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function received(status: number, headers: Headers, bytes: Buffer): Received {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    json = undefined;
  }
  return { status, headers, bytes, json };
}
