/**
 * The store's liveness check: a statement waiting longer than `timeouts.livenessMs` makes the
 * store ask, on a connection of its own, whether the server still answers. A statement may
 * rightly run long (a lock wait, a big migration, your own report), but a server that cannot
 * answer a `select 1` on a fresh connection cannot be answering the statements in flight
 * either: those connections are destroyed, so their callers fail with a retriable
 * {@link StoreTimeoutError} within about twice `livenessMs` instead of after `queryMs`.
 */
import type { Logger } from '../observability/logger';
import { isConnectionLoss } from './errors/connection-loss';
import { StoreTimeoutError } from './errors/store-timeout-error';

/** The part of a `pg` client the check opens and closes. @internal */
export interface ProbeClient {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  connection?: { stream?: { destroy(error?: Error): void } };
}

/** Watches the statements in flight on a store's connections. @internal */
export interface Liveness {
  /**
   * Notes a statement sent on `connection`; call the function it returns when the statement
   * settles, with whether the server answered it (a result or a server error, not a lost or
   * destroyed connection).
   */
  begin(connection: unknown): (answered: boolean) => void;
}

/** What the check needs of the store. @internal */
export interface LivenessOptions {
  /** How long a statement waits before a check, and how long the check may take. */
  readonly livenessMs: number;
  /** A new, unconnected client with the store's connection settings, outside the pool. */
  readonly client: () => ProbeClient;
  /** Destroys a connection with a statement in flight, failing its calls with `error`. */
  readonly destroy: (connection: unknown, error: StoreTimeoutError) => void;
  readonly logger: Logger;
}

interface Statement {
  readonly connection: unknown;
  readonly startedAt: number;
}

/** How a check ended: `dead` when the server gave no answer, with what was seen instead. */
type Verdict = { readonly dead: false } | { readonly dead: true; readonly cause: unknown };

/**
 * Starts watching; `undefined` when `livenessMs` is 0 (off). Nothing runs while no statement
 * has waited `livenessMs`; then one check at a time, one every `livenessMs` at most, for as
 * long as some statement keeps waiting. @internal
 */
export function createLiveness(options: LivenessOptions): Liveness | undefined {
  const { livenessMs: ms, logger } = options;
  if (!(ms > 0)) return undefined;
  /** In the order they were sent: the first is the one that has waited longest. */
  const inFlight = new Set<Statement>();
  let timer: NodeJS.Timeout | null = null;
  let checking = false;
  /** When the server last answered a statement, which proves it reachable. */
  let answeredAt = -Infinity;
  /** Since when the store has been declared unreachable, until the next answer. */
  let downSince: number | null = null;

  const arm = (delayMs: number): void => {
    if (timer !== null || checking) return;
    timer = setTimeout(tick, Math.max(0, delayMs));
    timer.unref();
  };

  function tick(): void {
    timer = null;
    const oldest = inFlight.values().next().value;
    if (oldest === undefined) return;
    const waited = performance.now() - oldest.startedAt;
    if (waited < ms) arm(ms - waited);
    else void check(waited);
  }

  const check = async (waited: number): Promise<void> => {
    checking = true;
    const started = performance.now();
    logger.debug('store: a statement is waiting; checking that the database answers', {
      waitedMs: Math.round(waited),
      livenessMs: ms,
    });
    const verdict = await probe(options.client, ms).catch((): Verdict => ({ dead: false }));
    checking = false;
    // A statement answered while the check waited: the server is there, the check was slow.
    if (verdict.dead && answeredAt < started) giveUp(started, verdict.cause);
    if (inFlight.size > 0) arm(started + ms - performance.now());
  };

  /** Destroys every connection with a statement in flight: none of them can be answered. */
  const giveUp = (since: number, cause: unknown): void => {
    const connections = new Set([...inFlight].map((s) => s.connection));
    // Their statements fail now; the next check is for statements sent after this.
    inFlight.clear();
    for (const connection of connections) {
      options.destroy(connection, new StoreTimeoutError('liveness', ms, { cause }));
    }
    const fields = {
      limit: 'liveness',
      timeoutMs: ms,
      connections: connections.size,
      ...(cause === undefined ? {} : { error: String(cause) }),
    };
    // Once per outage: while it lasts, every statement sent meets the same fate.
    if (downSince === null) {
      downSince = since;
      logger.warn('store: database did not answer in time; connection destroyed', fields);
    } else {
      logger.debug('store: database did not answer in time; connection destroyed', fields);
    }
  };

  return {
    begin(connection) {
      const statement: Statement = { connection, startedAt: performance.now() };
      inFlight.add(statement);
      arm(ms);
      return (answered) => {
        inFlight.delete(statement);
        if (!answered) return;
        answeredAt = performance.now();
        if (downSince !== null) {
          logger.info('store: database answers again', {
            downMs: Math.round(answeredAt - downSince),
          });
          downSince = null;
        }
      };
    },
  };
}

/** Whether `error` came from the server itself (an error response), which proves it there. @internal */
export function fromServer(error: unknown): boolean {
  return typeof (error as { severity?: unknown } | null)?.severity === 'string';
}

/**
 * Opens a connection and runs `select 1` within `ms`. No answer in time, or a connection
 * refused, reset or unreachable, is `dead`; an answer, an error response from the server (too
 * many connections, authentication) or anything else (a DNS failure, a TLS setting) is not:
 * the statements in flight are then left to `queryMs`.
 */
async function probe(create: () => ProbeClient, ms: number): Promise<Verdict> {
  let client: ProbeClient;
  try {
    client = create();
  } catch {
    return { dead: false };
  }
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), ms);
  });
  const attempt = client.connect().then(() => client.query('select 1'));
  const outcome = await Promise.race([
    attempt.then(
      () => ({ ok: true as const }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
    expired,
  ]);
  clearTimeout(timer);
  if (outcome !== 'expired' && outcome.ok) {
    // Ended politely (the server logs no lost client), but never waited on for long.
    const stop = setTimeout(() => client.connection?.stream?.destroy(), ms);
    stop.unref();
    void client
      .end()
      .catch(() => undefined)
      .finally(() => clearTimeout(stop));
    return { dead: false };
  }
  attempt.catch(() => undefined);
  client.connection?.stream?.destroy();
  if (outcome === 'expired') return { dead: true, cause: undefined };
  const { error } = outcome;
  return !fromServer(error) && isConnectionLoss(error)
    ? { dead: true, cause: error }
    : { dead: false };
}
