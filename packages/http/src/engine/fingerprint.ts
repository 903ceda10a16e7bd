import { createHash } from 'node:crypto';
import type { FingerprintRule } from './resolve-options';

/** A request body as the fingerprint sees it. */
export type RequestBody =
  /** No body, or an empty one. */
  | { readonly kind: 'none' }
  /** A JSON body, parsed (by the framework's parser or the engine). */
  | { readonly kind: 'json'; readonly value: unknown }
  /** Any other body, as its bytes. */
  | { readonly kind: 'bytes'; readonly bytes: Uint8Array };

/** What the engine reads of a request; each adapter makes one from its framework's request. */
export interface RequestView {
  /** The method, upper case. */
  readonly method: string;
  /** The request target as sent: the path with its query string. */
  readonly target: string;
  /** A header's value, its field lines joined with `, `; `undefined` when absent. */
  header(name: string): string | undefined;
  /** The body; called at most once, and only when the default fingerprint needs it. */
  body(): Promise<RequestBody>;
}

/**
 * The fingerprint of a request: the value passed to operations as the `request`, whose
 * canonical JSON's SHA-256 is the record's request hash. By default the method, the target
 * (path and query), the headers the route names and the body; a function given as
 * `fingerprint` replaces all of it.
 */
export async function fingerprintOf<Req>(
  rule: FingerprintRule<Req>,
  request: Req,
  view: RequestView,
): Promise<unknown> {
  if (rule.kind === 'custom') return { custom: await rule.fn(request) };
  const headers: Record<string, string | null> = {};
  for (const name of rule.headers) headers[name] = view.header(name) ?? null;
  return {
    method: view.method,
    target: view.target,
    headers,
    body: bodyPart(await view.body(), rule.ignoreFields),
  };
}

function bodyPart(body: RequestBody, ignoreFields: ReadonlySet<string>): unknown {
  switch (body.kind) {
    case 'none':
      return null;
    case 'bytes':
      // The hash of the bytes, not the bytes: the record's hash is of this value anyway.
      return { sha256: createHash('sha256').update(body.bytes).digest('hex') };
    case 'json':
      return { json: withoutFields(body.value, ignoreFields) };
  }
}

/** A JSON object without the ignored top-level fields; any other value as it is. */
function withoutFields(value: unknown, ignoreFields: ReadonlySet<string>): unknown {
  if (ignoreFields.size === 0 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).filter(([name]) => !ignoreFields.has(name)),
  );
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** True for `application/json` and any `+json` media type. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * The body of raw bytes: none when empty, parsed when the content type is JSON and the
 * bytes parse, the bytes otherwise (a JSON body that does not parse counts byte for byte).
 */
export function bodyFromBytes(bytes: Uint8Array, contentType: string | undefined): RequestBody {
  if (bytes.byteLength === 0) return { kind: 'none' };
  if (isJsonMediaType(contentType)) {
    try {
      return { kind: 'json', value: JSON.parse(strictUtf8.decode(bytes)) as unknown };
    } catch {
      // Not JSON after all: the bytes count as they are.
    }
  }
  return { kind: 'bytes', bytes };
}
