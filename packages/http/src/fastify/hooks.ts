import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestView } from '../engine/fingerprint';
import { bodyFromBytes } from '../engine/fingerprint';
import { errorResponse } from '../engine/error-response';
import { handleRequest, type Outcome } from '../engine/handle-request';
import type { IdempotencyContext } from '../engine/options';
import type { ResolvedRoute } from '../engine/resolve-options';
import { headerPairs, IDEMPOTENCY_KEY_HEADER, type HeldResponse } from '../engine/response';

/** What the hooks of one request share while its handler runs. */
interface Pending {
  /**
   * `before` until the transaction is open, `handler` while the handler runs in it, `done`
   * once the request is answered (a problem, a replay, or the handler's reply).
   */
  phase: 'before' | 'handler' | 'done';
  context?: IdempotencyContext;
  /** The error the handler threw, seen by onError once the error handler has answered. */
  threw?: { readonly error: unknown };
}

interface RequestState extends Pending {
  readonly outcome: Promise<Outcome>;
  /** Settles the engine's wait for the handler's response. */
  readonly finish: { resolve(response: HeldResponse): void; reject(error: unknown): void };
}

const states = new WeakMap<FastifyRequest, RequestState>();

/** The idempotency context of a request in its handler, or `undefined`. */
export function contextOf(request: FastifyRequest): IdempotencyContext | undefined {
  return states.get(request)?.context;
}

/** The route-level hooks of one idempotent route. */
export interface RouteHooks {
  preHandler(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown>;
  onError(request: FastifyRequest, reply: FastifyReply, error: Error): Promise<void>;
}

/**
 * The hooks that hold a route's handler inside its transaction. `preHandler` starts the
 * engine and lets the handler run once the transaction is open (or answers at once: a
 * problem, a replay); `onError` notes a thrown error; `onSend` hands the serialized reply
 * to the engine and waits for the commit (or rollback) before letting it go out.
 */
export function routeHooks(route: ResolvedRoute<FastifyRequest>): RouteHooks {
  return {
    async preHandler(request, reply) {
      let started!: () => void;
      const running = new Promise<undefined>((resolve) => {
        started = () => resolve(undefined);
      });
      let finish!: RequestState['finish'];
      const response = new Promise<HeldResponse>((resolve, reject) => {
        finish = { resolve, reject };
      });
      const pending: Pending = { phase: 'before' };
      const outcome = handleRequest(
        route,
        {
          request,
          view: requestView(request),
          keyField: request.raw.headersDistinct[IDEMPOTENCY_KEY_HEADER],
        },
        (context, signal) => {
          pending.context = context;
          pending.phase = 'handler';
          signal.addEventListener('abort', () => finish.reject(signal.reason), { once: true });
          started();
          return response;
        },
      );
      // Awaited in onSend; this only keeps an early failure from being reported unhandled.
      outcome.catch(() => undefined);
      const state: RequestState = Object.assign(pending, { outcome, finish });
      states.set(request, state);
      const early = await Promise.race([running, outcome]);
      if (early === undefined) return undefined; // the handler runs now, in the transaction
      state.phase = 'done';
      if (early.kind === 'threw') throw early.error;
      sendHeld(reply, early.response);
      return reply;
    },

    async onError(request, _reply, error) {
      const state = states.get(request);
      if (state?.phase === 'handler' && state.threw === undefined) state.threw = { error };
    },

    async onSend(request, reply, payload) {
      const state = states.get(request);
      if (state === undefined || state.phase !== 'handler') return payload;
      state.phase = 'done';
      const body = await payloadBytes(payload);
      if (state.threw !== undefined) state.finish.reject(state.threw.error);
      else
        state.finish.resolve({
          status: reply.statusCode,
          headers: headerPairs(reply.getHeaders()),
          body,
        });
      let outcome: Outcome;
      try {
        outcome = await state.outcome;
      } catch (error) {
        // Nothing committed: the handler's headers must not go out with the error response.
        for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name);
        throw error;
      }
      if (outcome.kind === 'threw') {
        // Rolled back; the error handler's reply (Fastify's tells the message) is replaced.
        for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name);
        const answer = errorResponse(outcome.error, route.logger, { operation: route.operation });
        sendHeaders(reply, answer);
        return Buffer.from(answer.body);
      }
      if (outcome.kind === 'respond') {
        sendHeaders(reply, outcome.response);
        return Buffer.from(outcome.response.body);
      }
      return body;
    },
  };
}

function requestView(request: FastifyRequest): RequestView {
  return {
    method: request.method.toUpperCase(),
    target: request.url,
    header: (name) => {
      const value = request.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    body: async () => {
      const contentType = request.headers['content-type'];
      const body: unknown = request.body;
      if (body === undefined || body === null) return { kind: 'none' };
      if (body instanceof Uint8Array) return bodyFromBytes(body, contentType);
      if (typeof body === 'string') return bodyFromBytes(Buffer.from(body, 'utf8'), contentType);
      return { kind: 'json', value: body };
    },
  };
}

/** A reply payload after serialization, as bytes. */
async function payloadBytes(payload: unknown): Promise<Buffer> {
  if (payload === undefined || payload === null) return Buffer.alloc(0);
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  if (isReadable(payload)) {
    const chunks: Buffer[] = [];
    for await (const chunk of payload) {
      chunks.push(
        typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk as Uint8Array),
      );
    }
    return Buffer.concat(chunks);
  }
  return Buffer.from(`${String(payload)}`, 'utf8');
}

function isReadable(value: unknown): value is Readable {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { pipe?: unknown }).pipe === 'function' &&
    Symbol.asyncIterator in value
  );
}

/** Sets the status and headers of a response the handler did not make. */
function sendHeaders(reply: FastifyReply, response: HeldResponse): void {
  const grouped = new Map<string, string[]>();
  for (const [name, value] of response.headers)
    grouped.set(name, [...(grouped.get(name) ?? []), value]);
  reply.code(response.status);
  for (const [name, values] of grouped)
    reply.header(name, values.length === 1 ? values[0] : values);
}

/** Sends a problem or a replay from the preHandler hook. */
function sendHeld(reply: FastifyReply, response: HeldResponse): void {
  sendHeaders(reply, response);
  reply.send(Buffer.from(response.body));
}
