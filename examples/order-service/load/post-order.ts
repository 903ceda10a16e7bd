/**
 * A client of `POST /orders` that behaves as a careful client should: one Idempotency-Key per
 * order, and on a time-out, a lost connection, a 409 (the first try still runs) or a 5xx it
 * tries again with the SAME key and body until it gets an answer that settles it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Order, type NewOrder } from '../orders/contract';

/** What the client saw, summed over all requests. */
export interface ClientStats {
  /** HTTP requests sent, retries and duplicates included. */
  requests: number;
  /** Requests sent again with the same key after a failure. */
  retries: number;
  /** Answers marked `Idempotent-Replayed: true`. */
  replayed: number;
  /** 409: the key's first request was still running. */
  inProgress: number;
  /** 5xx answers. */
  serverErrors: number;
  /** Requests that got no answer in time (or that the client dropped on purpose). */
  timeouts: number;
  /** Requests that could not connect or lost their connection. */
  connectionErrors: number;
  /** 422: a key reused with another body, refused. */
  conflicts: number;
}

export function emptyClientStats(): ClientStats {
  return {
    requests: 0,
    retries: 0,
    replayed: 0,
    inProgress: 0,
    serverErrors: 0,
    timeouts: 0,
    connectionErrors: 0,
    conflicts: 0,
  };
}

/** How one order's requests are made. */
export interface PostOptions {
  readonly baseUrl: string;
  /** Time limit of one request, in milliseconds. */
  readonly timeoutMs: number;
  /** Time limit of the first request only (to drop its answer on purpose); default timeoutMs. */
  readonly firstTimeoutMs?: number;
  /** Give up after this long, in milliseconds. */
  readonly giveUpMs: number;
  readonly stats: ClientStats;
}

/** A settled answer: the order created (or replayed), with the exact body bytes. */
export interface Settled {
  readonly status: number;
  readonly order: Order;
  readonly body: string;
  readonly replayed: boolean;
}

/** Thrown when a request was answered with a status no retry can change. */
export class RejectedError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`POST /orders answered ${status}: ${body.slice(0, 200)}`);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

type Attempt =
  | { readonly kind: 'settled'; readonly settled: Settled }
  | { readonly kind: 'retry' }
  | { readonly kind: 'rejected'; readonly status: number; readonly body: string };

async function attempt(
  key: string,
  order: NewOrder,
  options: PostOptions,
  timeoutMs: number,
): Promise<Attempt> {
  const { stats } = options;
  stats.requests += 1;
  let response: Response;
  let body: string;
  try {
    response = await fetch(`${options.baseUrl}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(order),
      signal: AbortSignal.timeout(timeoutMs),
    });
    body = await response.text();
  } catch (error) {
    if (error instanceof Error && error.name === 'TimeoutError') stats.timeouts += 1;
    else stats.connectionErrors += 1;
    return { kind: 'retry' };
  }
  if (response.status === 200 || response.status === 201) {
    const replayed = response.headers.get('idempotent-replayed') === 'true';
    if (replayed) stats.replayed += 1;
    const parsed = Order.safeParse(parseJson(body));
    if (!parsed.success) return { kind: 'rejected', status: response.status, body };
    return {
      kind: 'settled',
      settled: { status: response.status, order: parsed.data, body, replayed },
    };
  }
  if (response.status === 409) stats.inProgress += 1;
  if (response.status >= 500) stats.serverErrors += 1;
  if (response.status === 409 || response.status === 429 || response.status >= 500) {
    return { kind: 'retry' };
  }
  if (response.status === 422) stats.conflicts += 1;
  return { kind: 'rejected', status: response.status, body };
}

/**
 * Posts `order` under `key` until it settles. Rejects with {@link RejectedError} for an
 * answer no retry changes (a 4xx other than 409), or after `giveUpMs`.
 */
export async function postOrder(
  key: string,
  order: NewOrder,
  options: PostOptions,
): Promise<Settled> {
  const deadline = Date.now() + options.giveUpMs;
  for (let n = 0; ; n += 1) {
    if (n > 0) options.stats.retries += 1;
    const timeoutMs = n === 0 ? (options.firstTimeoutMs ?? options.timeoutMs) : options.timeoutMs;
    const result = await attempt(key, order, options, timeoutMs);
    if (result.kind === 'settled') return result.settled;
    if (result.kind === 'rejected') throw new RejectedError(result.status, result.body);
    if (Date.now() > deadline) throw new Error(`gave up on ${key} after ${options.giveUpMs} ms`);
    // Backoff with jitter, short: the services come back within a few seconds.
    await sleep(Math.random() * Math.min(1_000, 20 * 2 ** n));
  }
}
