import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';

/**
 * A `node:http` request listener that serves a Fetch API handler (such as one made by
 * `idempotent`), through `@hono/node-server`. It leaves the process's global `Request` and
 * `Response` alone. A handler that rejects gets an empty 500.
 *
 * ```ts
 * createServer(toNodeListener(createOrder)).listen(3000);
 * ```
 */
export function toNodeListener(
  handler: (request: Request) => Promise<Response>,
): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
  return getRequestListener(handler, { overrideGlobalObjects: false });
}
