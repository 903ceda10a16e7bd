import type { Knex } from 'knex';
import type { Logger } from '../observability/logger';
import { fullJitterBackoff } from '../retry/backoff';
import type { Store } from '../store/store';

/** A subscription to the outbox channel. @internal */
export interface Listener {
  /** Whether notifications are currently being received. */
  readonly active: boolean;
  close(): Promise<void>;
}

interface NotifyingClient {
  query(sql: string): Promise<unknown>;
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
 *   the store's own connection settings; on error it reconnects with full-jitter backoff.
 * - PGlite: `LISTEN` runs through knex on PGlite's single connection and notifications come
 *   from the PGlite instance's `onNotification`.
 *
 * If listening cannot be set up, the relay keeps polling and the listener reports inactive.
 */
export async function listen(
  store: Store,
  channel: string,
  onWake: () => void,
  logger: Logger,
): Promise<Listener> {
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
  return listenOnDedicatedConnection(store.knex, statement, channel, onWake, logger);
}

/** Ends a connection we no longer want; a late error from it is ignored. */
function dispose(client: NotifyingClient): Promise<void> {
  client.removeAllListeners();
  client.on('error', () => undefined);
  return client.end().catch(() => undefined);
}

async function listenOnDedicatedConnection(
  knex: Knex,
  statement: string,
  channel: string,
  onWake: () => void,
  logger: Logger,
): Promise<Listener> {
  const factory = knex.client as unknown as RawClientFactory;
  let client: NotifyingClient | null = null;
  let closed = false;
  let failures = 0;
  let timer: NodeJS.Timeout | null = null;

  const connect = async (): Promise<void> => {
    if (closed) return;
    let next: NotifyingClient | null = null;
    try {
      next = await factory.acquireRawConnection();
      next.on('notification', (message) => {
        if (message.channel === channel) onWake();
      });
      const lost = (error?: Error): void => {
        if (client !== next) return;
        client = null;
        if (next) void dispose(next);
        if (closed) return;
        logger.warn('relay: notification connection lost; polling until it is back', {
          error: error ? String(error) : 'connection ended',
        });
        schedule();
      };
      next.on('error', lost);
      next.on('end', lost);
      await next.query(statement);
      if (closed) {
        void dispose(next);
        return;
      }
      client = next;
      failures = 0;
      onWake();
    } catch (error) {
      if (next) void dispose(next);
      logger.warn('relay: LISTEN failed; polling until it succeeds', { error: String(error) });
      schedule();
    }
  };

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
      const current = client;
      client = null;
      if (current) await dispose(current);
    },
  };
}
