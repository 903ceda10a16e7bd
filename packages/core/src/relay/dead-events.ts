import { ConfigurationError } from '../errors/configuration-error';
import type { RelayRuntime } from './runtime';
import { requeueDead, selectDead } from './sql/dead';
import type { DeadEvent } from './types';
import { storedHeaders } from '../outbox/sql/headers';

/** A row id as the outbox table stores it: a bigint, as decimal text. */
const ROW_ID = /^\d{1,19}$/;

/**
 * `Relay.listDead`: dead events in id order, `limit` (1–10 000, default 100) after
 * `afterId`. @internal
 */
export async function listDead(
  rt: RelayRuntime,
  listOptions: { limit?: number; afterId?: string } = {},
): Promise<DeadEvent[]> {
  const limit = listOptions.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new ConfigurationError('limit must be an integer from 1 to 10 000', { limit });
  }
  const afterId = listOptions.afterId ?? null;
  if (afterId !== null && !ROW_ID.test(afterId)) {
    throw new ConfigurationError('afterId must be a row id', { afterId });
  }
  const { store } = rt.options;
  const rows = await selectDead(store.knex, store.names, limit, afterId);
  return rows.map((row) => ({
    id: String(row.id),
    destination: row.destination,
    key: row.partition_key,
    messageId: row.message_id,
    headers: storedHeaders(row.headers),
    payload: row.payload,
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: new Date(row.created_at),
    diedAt: new Date(row.available_at),
  }));
}

/**
 * `Relay.requeue`: puts a dead event back as a new pending row; resolves to its id, or null
 * when `id` names no dead event. @internal
 */
export async function requeue(rt: RelayRuntime, id: string): Promise<string | null> {
  if (typeof id !== 'string' || !ROW_ID.test(id)) {
    throw new ConfigurationError('requeue needs a row id from listDead()', { id });
  }
  const { store, notify, logger } = rt.options;
  const next = await requeueDead(store.knex, store.names, id, notify ? rt.channel : null);
  if (next !== null) logger.info('relay: dead event requeued', { id, newId: next });
  return next;
}
