import { optionKeys, rejectUnknownOptions } from '../config/options';
import { createDeadLetters } from '../dead-letters/create-dead-letters';
import { ConfigurationError } from '../errors/configuration-error';
import { isLogger, silentLogger, type Logger } from '../observability/logger';
import type { Store } from '../store/store';
import { runBulk } from './bulk';
import { runCleanup } from './cleanup';
import { inMigratedSchema } from './missing-schema';
import { adminOperations } from './operations';
import { adminOutbox } from './outbox';
import { redeliverDeadLetter } from './redeliver';
import { dropReplicationSlot, readReplicationSlots } from './replication-slots';
import { selectDeadLetters, selectOutbox } from './select';
import { readStatus } from './status';
import type { Admin } from './types';

/** Options of {@link createAdmin}. An unknown key is refused with `ConfigurationError`. */
export interface AdminOptions {
  /**
   * Where every change an operator makes is logged at `info` (dead letters redelivered,
   * requeued or deleted; outbox events requeued or deleted; records released; cleanups), with
   * the ids involved and never a payload: an audit trail of hands-on fixes. Default: nowhere.
   */
  readonly logger?: Logger;
}

const ADMIN_KEYS = optionKeys<AdminOptions>()(['logger']);

function checkLogger(value: unknown): Logger {
  if (value === undefined) return silentLogger;
  if (!isLogger(value)) {
    throw new ConfigurationError('logger must have debug, info, warn and error methods');
  }
  return value;
}

/**
 * Opens the operator's view of a store: its status figures, dead letters, outbox and
 * operations, and cleanup on demand. The CLI (`justonce`) and the dashboard are built on it.
 * Nothing runs until a method is called; it holds no connection of its own. Every argument
 * is checked before any SQL: a bad one is a `ConfigurationError`.
 *
 * @example
 * ```ts
 * const admin = createAdmin(store, { logger });
 * const status = await admin.status();
 * for (const letter of await admin.deadLetters.list({ consumer: 'billing', includeRequeued: false })) {
 *   await admin.redeliverDeadLetter(letter.id); // the relay publishes it, the consumer handles it once
 * }
 * ```
 */
export function createAdmin(store: Store, options: AdminOptions = {}): Admin {
  if (typeof store !== 'object' || store === null || !store.knex || !store.names) {
    throw new ConfigurationError('createAdmin needs a store (see createStore)');
  }
  rejectUnknownOptions(options, ADMIN_KEYS, 'createAdmin');
  const logger = checkLogger(options.logger);
  const letters = createDeadLetters(store);
  const outbox = adminOutbox(store);
  const operations = adminOperations(store);
  const run = <T>(call: () => Promise<T>): Promise<T> => inMigratedSchema(store, call);
  const listLetters: Admin['deadLetters']['list'] = (listOptions) =>
    run(() => letters.list(listOptions));
  const listOutbox: Admin['outbox']['list'] = (listOptions) => run(() => outbox.list(listOptions));
  return {
    status: () => run(() => readStatus(store)),
    deadLetters: {
      list: listLetters,
      select: (selectOptions) => selectDeadLetters(listLetters, selectOptions),
      get: (id) => run(() => letters.get(id)),
      async requeue(id) {
        const envelope = await run(() => letters.requeue(id));
        logger.info('admin: dead letter requeued', { id });
        return envelope;
      },
      async delete(id) {
        const deleted = await run(() => letters.delete(id));
        if (deleted) logger.info('admin: dead letter deleted', { id });
        return deleted;
      },
    },
    async redeliverDeadLetter(id, redeliverOptions) {
      const rowId = await run(() => redeliverDeadLetter(store, id, redeliverOptions));
      logger.info('admin: dead letter redelivered through the outbox', { id, outboxId: rowId });
      return rowId;
    },
    outbox: {
      list: listOutbox,
      select: (selectOptions) => selectOutbox(listOutbox, selectOptions),
      get: (id) => run(() => outbox.get(id)),
      async requeue(id) {
        const newId = await run(() => outbox.requeue(id));
        if (newId !== null) logger.info('admin: outbox event requeued', { id, newId });
        return newId;
      },
      async delete(id) {
        const deleted = await run(() => outbox.delete(id));
        if (deleted) logger.info('admin: outbox event deleted', { id });
        return deleted;
      },
    },
    operations: {
      list: (listOptions) => run(() => operations.list(listOptions)),
      get: (ref) => run(() => operations.get(ref)),
      async release(ref, releaseOptions) {
        const released = await run(() => operations.release(ref, releaseOptions));
        if (released) {
          logger.info('admin: operation record released', {
            scope: ref.scope ?? 'default',
            operation: ref.operation,
            key: ref.key,
            force: releaseOptions?.force === true,
          });
        }
        return released;
      },
    },
    replicationSlots: () => readReplicationSlots(store),
    async dropReplicationSlot(name) {
      await dropReplicationSlot(store, name);
      logger.info('admin: replication slot dropped', { slot: name });
    },
    async cleanup(cleanupOptions) {
      const result = await run(() => runCleanup(store, cleanupOptions));
      logger.info('admin: cleanup ran', {
        deleted: result.deleted,
        outboxDeleted: result.outboxDeleted,
        complete: result.complete,
      });
      return result;
    },
    bulk: runBulk,
  };
}
