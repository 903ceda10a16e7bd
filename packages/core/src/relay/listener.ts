import { crashPoint } from '../common/crash-points';
import { withTimeout } from '../common/time';
import type { Knex } from 'knex';
import type { Logger } from '../observability/logger';
import { fullJitterBackoff } from '../retry/backoff';
import { StoreTimeoutError } from '../store/errors/store-timeout-error';
import { DEFAULT_TIMEOUTS, destroyConnection } from '../store/limits';
import type { Store } from '../store/store';

/** A subscription to the outbox channel. @internal */
export interface Listener {
  /** Whether notifications are currently being received. */
  readonly active: boolean;
  close(): Promise<void>;
}

interface NotifyingClient {
  query(config: string | { text: string; query_timeout?: number }): Promise<unknown>;
  on(event: 'notification', cb: (message: { channel: string }) => void): unknown;
  on(event: 'error' | 'end', cb: (error?: Error) => void): unknown;
  removeAllListeners(event?: string): unknown;
  end(): Promise<void>;
}

interface RawClientFactory {
  acquireRawConnection(): Promise<NotifyingClient>;
}

interface PgliteNotifier {
  onNotification(cb: (channel: string, payload: string) => void): () => void;
}

/**
 * Listens on `channel` and calls `onWake` for each notification (and after every reconnect,
 * since notifications may have been missed meanwhile).
 *
 * - PostgreSQL: a dedicated connection outside the pool (LISTEN is per session), opened with
 *   the store's own connection settings; on error it reconnects with full-jitter backoff. A
 *   half-open connection (the host vanished, the network partitioned) raises no error, and
 *   an idle one would wait for notifications forever: every `timeouts.listenCheckMs` it
 *   runs `select 1`, which must answer within the same time, or the connection is destroyed
 *   and replaced.
 * - PGlite: `LISTEN` runs through knex on PGlite's single connection and notifications come
 *   from the PGlite instance's `onNotification`.
 *
 * - MySQL and MariaDB have no LISTEN/NOTIFY: no connection is opened and the listener reports
 *   inactive. The relay then finds new events as it does whenever no notification comes: a
 *   loop that claimed nothing sleeps `pollIntervalMs` (see `runLoop`), so an event committed
 *   while every loop sleeps waits up to that long; a loop whose batch came back full goes on
 *   at once, so a backlog is drained without waiting.
 *
 * If listening cannot be set up, the relay keeps polling and the listener reports inactive.
 */
export async function listen(
  store: Store,
  channel: string,
  onWake: () => void,
  logger: Logger,
): Promise<Listener> {
  if (store.dialect === 'mysql') return { active: false, close: async () => undefined };
  const statement = `listen "${channel}"`;
  if (store.dialect === 'pglite') {
    const pglite = (store.knex.client as { pglite?: Partial<PgliteNotifier> }).pglite;
    if (typeof pglite?.onNotification !== 'function') {
      logger.warn('relay: PGlite instance does not expose notifications; polling only');
      return { active: false, close: async () => undefined };
    }
    const unsubscribe = pglite.onNotification((name) => {
      if (name === channel) onWake();
    });
    try {
      await store.knex.raw(statement);
    } catch (error) {
      unsubscribe();
      logger.warn('relay: LISTEN failed on PGlite; polling only', { error: String(error) });
      return { active: false, close: async () => undefined };
    }
    let active = true;
    return {
      get active() {
        return active;
      },
      close: async () => {
        if (!active) return;
        active = false;
        unsubscribe();
        await store.knex.raw(`unlisten "${channel}"`).catch(() => undefined);
      },
    };
  }
  const checkMs = store.timeouts?.listenCheckMs ?? DEFAULT_TIMEOUTS.listenCheckMs;
  return listenOnDedicatedConnection(store.knex, statement, channel, onWake, logger, checkMs);
}

/** Ends a connection we no longer want; a late error from it is ignored. */
function dispose(client: NotifyingClient): Promise<void> {
  client.removeAllListeners();
  client.on('error', () => undefined);
  return client.end().catch(() => undefined);
}

/**
 * Runs `sql` on the dedicated connection within `ms` (none when 0). On time out the
 * connection is destroyed, which fails the statement and ends the connection, so its `end`
 * handler takes over; the rejection carries a {@link StoreTimeoutError}.
 */
async function within(client: NotifyingClient, sql: string, ms: number): Promise<void> {
  if (ms <= 0) {
    await client.query(sql);
    return;
  }
  // Our own timer decides; the store's per-statement bound is lifted so it cannot race it.
  await withTimeout(client.query({ text: sql, query_timeout: 0 }), ms, () => {
    const error = new StoreTimeoutError('listen-check', ms);
    destroyConnection(client, error);
    return error;
  });
}

async function listenOnDedicatedConnection(
  knex: Knex,
  statement: string,
  channel: string,
  onWake: () => void,
  logger: Logger,
  checkMs: number,
): Promise<Listener> {
  const factory = knex.client as unknown as RawClientFactory;
  let client: NotifyingClient | null = null;
  let closed = false;
  let failures = 0;
  let timer: NodeJS.Timeout | null = null;
  let checker: NodeJS.Timeout | null = null;
  /** Whether a connection was lost since the last one was set up, to log its return. */
  let down = false;

  const connect = async (): Promise<void> => {
    if (closed) return;
    let next: NotifyingClient | null = null;
    try {
      next = await factory.acquireRawConnection();
      next.on('notification', (message) => {
        if (message.channel !== channel) return;
        crashPoint('relay.notify');
        onWake();
      });
      const lost = (error?: Error): void => {
        if (client !== next) return;
        client = null;
        if (next) void dispose(next);
        if (closed) return;
        down = true;
        logger.warn('relay: notification connection lost; polling until it is back', {
          error: error ? String(error) : 'connection ended',
        });
        schedule();
      };
      next.on('error', lost);
      next.on('end', lost);
      await within(next, statement, checkMs);
      if (closed) {
        void dispose(next);
        return;
      }
      client = next;
      failures = 0;
      if (down) {
        down = false;
        logger.info('relay: notification connection restored', { channel });
      }
      onWake();
    } catch (error) {
      if (next) void dispose(next);
      down = true;
      logger.warn('relay: LISTEN failed; polling until it succeeds', { error: String(error) });
      schedule();
    }
  };

  /** Whether a check is running, so that a slow one is not joined by the next. */
  let checking = false;
  /** Checks the live connection; a failed check destroys it and `lost` reconnects. */
  const check = (): void => {
    const current = client;
    if (current === null || closed || checking) return;
    checking = true;
    within(current, 'select 1', checkMs)
      .catch((error: unknown) => {
        // A check that failed without destroying the connection (a server error) still means
        // the connection cannot be trusted: destroy it so that `lost` replaces it.
        if (client === current) {
          destroyConnection(
            current,
            new StoreTimeoutError('listen-check', checkMs, { cause: error }),
          );
        }
      })
      .finally(() => {
        checking = false;
      });
  };
  if (checkMs > 0) {
    checker = setInterval(check, checkMs);
    checker.unref();
  }

  const schedule = (): void => {
    if (closed || timer !== null) return;
    failures += 1;
    const delay = 50 + fullJitterBackoff(failures, { baseMs: 200, capMs: 10_000 });
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, delay);
    timer.unref();
  };

  await connect();
  return {
    get active() {
      return client !== null;
    },
    close: async () => {
      closed = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      if (checker !== null) clearInterval(checker);
      checker = null;
      const current = client;
      client = null;
      if (current) await dispose(current);
    },
  };
}
