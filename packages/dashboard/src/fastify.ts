import type { IncomingHttpHeaders } from 'node:http';
import { newNonce, securityHeaders } from './security';
import type { Dashboard } from './types';

/** The parts of a Fastify request the plugin reads. */
export interface FastifyRequestLike {
  readonly method: string;
  readonly url: string;
  readonly protocol: 'http' | 'https';
  readonly host: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
  /** The client's address, after Fastify's `trustProxy` setting. */
  readonly ip?: string;
}

/** The parts of a Fastify reply the plugin uses. */
export interface FastifyReplyLike {
  code(statusCode: number): FastifyReplyLike;
  header(key: string, value: string | string[]): FastifyReplyLike;
  send(payload?: Buffer): FastifyReplyLike;
}

/** The parts of a Fastify instance the plugin uses. */
export interface FastifyInstanceLike {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    options: { parseAs: 'buffer'; bodyLimit?: number },
    parser: (
      request: never,
      body: Buffer,
      done: (error: Error | null, body?: Buffer) => void,
    ) => void,
  ): void;
  all(
    path: string,
    handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<FastifyReplyLike>,
  ): unknown;
  setErrorHandler(
    handler: (
      error: { statusCode?: number },
      request: FastifyRequestLike,
      reply: FastifyReplyLike,
    ) => unknown,
  ): unknown;
}

/** What the plugin answers to a request Fastify refused, by status. */
const ERROR_TEXT: Readonly<Record<number, string>> = {
  413: 'The form is too large.',
  415: 'Unsupported content type.',
};

/** Form posts are small; this bounds what the plugin buffers. */
const BODY_LIMIT = 1024 * 1024;

function requestOf(request: FastifyRequestLike): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const url = `${request.protocol}://${request.host}${request.url}`;
  const hasBody = !/^(GET|HEAD)$/.test(request.method) && request.body instanceof Buffer;
  return new Request(url, {
    method: request.method,
    headers,
    ...(hasBody ? { body: new Uint8Array(request.body as Buffer) } : {}),
  });
}

/**
 * The dashboard as a Fastify plugin. Register it with the dashboard's base path as prefix:
 * `app.register(fastifyDashboard(dashboard), { prefix: '/ops' })`. Inside the plugin (and only
 * there: Fastify encapsulates it) every body is kept as bytes, so the dashboard's forms reach
 * it as posted.
 */
export function fastifyDashboard(
  dashboard: Dashboard,
): (instance: FastifyInstanceLike) => Promise<void> {
  return async (instance) => {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: BODY_LIMIT },
      (_request, body, done) => done(null, body),
    );
    const handle = async (
      request: FastifyRequestLike,
      reply: FastifyReplyLike,
    ): Promise<FastifyReplyLike> => {
      const response = await dashboard.fetch(
        requestOf(request),
        typeof request.ip === 'string' ? { address: request.ip } : {},
      );
      reply.code(response.status);
      response.headers.forEach((value, name) => {
        if (name !== 'set-cookie') reply.header(name, value);
      });
      const cookies = response.headers.getSetCookie();
      if (cookies.length > 0) reply.header('set-cookie', cookies);
      return reply.send(Buffer.from(await response.arrayBuffer()));
    };
    instance.all('/', handle);
    instance.all('/*', handle);
    // What Fastify refuses before the dashboard sees it (a body over the limit, a bad
    // length): a plain answer with the dashboard's headers, and no error text.
    instance.setErrorHandler((error, _request, reply) => {
      const status =
        error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
      reply.code(status);
      for (const [name, value] of Object.entries(securityHeaders(newNonce()))) {
        reply.header(name, value);
      }
      reply.header('content-type', 'text/plain; charset=utf-8');
      return reply.send(
        Buffer.from(ERROR_TEXT[status] ?? (status >= 500 ? 'Internal error.' : 'Bad request.')),
      );
    });
  };
}
