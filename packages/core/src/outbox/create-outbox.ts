import type { Knex } from 'knex';
import { optionKeys, positiveIntegerOption, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { isMysql } from '../store/dialect';
import { isMessageType, type MessagePayload, type MessageType } from '../messages/message-type';
import type { Store } from '../store/store';
import { transactionsOption } from '../transactions/option';
import { InvalidTransactionError } from '../transactions/invalid-transaction-error';
import type { SqlRunner } from '../transactions/sql';
import type { TransactionAdapter } from '../transactions/types';
import { encodeMessage, handlerMessageOptions } from './add-message';
import { outboxChannel } from './channel';
import { encodeEvents, type EventLimits } from './encode';
import { insertAll } from './insert-all';
import { insertCreated } from './trace-create';
import type {
  AddMessageOptions,
  AddOptions,
  EventCause,
  HandlerOutbox,
  MessageEventOptions,
  Outbox,
  OutboxEvent,
} from './types';

/**
 * Widest destination, key and message id a MySQL outbox holds: its columns are
 * `varchar(255)` (characters; PostgreSQL's are `text`), which keeps the message id's unique key
 * and the pending key index within InnoDB's 3 072-byte limit at 4 bytes per character.
 */
export const MYSQL_MAX_TEXT_LENGTH = 255;

/**
 * Refuses limits a MySQL outbox cannot store, so that a longer value is refused by `add` as
 * an invalid event rather than by the server. `maxKeyLength` counts UTF-8 bytes, the others
 * characters: 255 of either fits 255 characters.
 */
function refuseWiderThanMysql(limits: EventLimits): void {
  for (const name of ['maxKeyLength', 'maxDestinationLength', 'maxMessageIdLength'] as const) {
    if (limits[name] > MYSQL_MAX_TEXT_LENGTH) {
      throw new ConfigurationError(
        `${name} above ${MYSQL_MAX_TEXT_LENGTH} does not fit a MySQL store: its outbox holds ` +
          `${MYSQL_MAX_TEXT_LENGTH} characters there`,
        { [name]: limits[name] },
      );
    }
  }
}

/** Options of {@link createOutbox}. */
export interface OutboxOptions<Tx = Knex.Transaction> {
  /** Where events are stored; the same store the relay reads. */
  readonly store: Store;
  /**
   * Whose transactions `add` writes into: a Drizzle, Kysely, TypeORM or node-postgres
   * transaction through that library's adapter (see docs/transactions.md). Default: knex
   * transactions (`store.knex.transaction`).
   */
  readonly transactions?: TransactionAdapter<Tx>;
  /**
   * Queue a `pg_notify` on the outbox channel in the adding transaction, so a listening
   * relay wakes at commit instead of at its next poll. Default `true`. MySQL and MariaDB have
   * no notifications: there relays poll, and this option changes nothing.
   */
  readonly notify?: boolean;
  /** Longest partition key in UTF-8 bytes. Default 255. */
  readonly maxKeyLength?: number;
  /** Longest destination in characters. Default 255. */
  readonly maxDestinationLength?: number;
  /** Longest message id in characters. Default 255. */
  readonly maxMessageIdLength?: number;
  /** Largest payload in bytes after serialization. Default 1 MiB. */
  readonly maxPayloadBytes?: number;
}

const OUTBOX_KEYS = optionKeys<OutboxOptions<unknown>>()([
  'store',
  'transactions',
  'notify',
  'maxKeyLength',
  'maxDestinationLength',
  'maxMessageIdLength',
  'maxPayloadBytes',
]);

/**
 * Creates the outbox: `add(trx, events)` writes events in the caller's transaction, so they are
 * published if and only if that transaction commits.
 *
 * @example
 * ```ts
 * const outbox = createOutbox({ store });
 * await store.knex.transaction(async (trx) => {
 *   await trx.raw('update accounts set balance = balance - 10 where id = ?', [id]);
 *   await outbox.add(trx, { destination: 'payments', key: id, payload: { id, amount: 10 } });
 * });
 * ```
 */
/** Adds events through an already entered transaction (handlers' `ctx.outbox`). */
type AddIn = (
  tx: SqlRunner,
  target: unknown,
  third?: unknown,
  fourth?: unknown,
) => Promise<string[] | string>;

/** Where an outbox made here keeps {@link AddIn}, out of its public members. */
const ADD_IN = Symbol('justonce.outbox.addIn');

export function createOutbox<Tx = Knex.Transaction>(options: OutboxOptions<Tx>): Outbox<Tx> {
  // Unknown keys first, so that a misspelt `store` is named as such.
  rejectUnknownOptions(options, OUTBOX_KEYS, 'createOutbox');
  if (typeof options !== 'object' || options === null || !options.store) {
    throw new ConfigurationError('createOutbox needs a store');
  }
  const { store } = options;
  if (options.notify !== undefined && typeof options.notify !== 'boolean') {
    throw new ConfigurationError('notify must be a boolean', { notify: options.notify });
  }
  const limits: EventLimits = {
    maxKeyLength: positiveIntegerOption(options.maxKeyLength, 'maxKeyLength', 255),
    maxDestinationLength: positiveIntegerOption(
      options.maxDestinationLength,
      'maxDestinationLength',
      255,
    ),
    maxMessageIdLength: positiveIntegerOption(
      options.maxMessageIdLength,
      'maxMessageIdLength',
      255,
    ),
    maxPayloadBytes: positiveIntegerOption(options.maxPayloadBytes, 'maxPayloadBytes', 1024 * 1024),
  };
  if (isMysql(store)) refuseWiderThanMysql(limits);
  const channel = options.notify === false ? null : outboxChannel(store.names);
  const distribution = store.distribution;
  const transactions = transactionsOption(options.transactions, store.knex, 'createOutbox');

  async function addIn(
    tx: SqlRunner,
    target: unknown,
    third?: unknown,
    fourth?: unknown,
  ): Promise<string[] | string> {
    if (isMessageType(target)) {
      const event = await encodeMessage(target, third, fourth, limits);
      await insertCreated([event], (traced) =>
        insertAll(tx, store.names, traced, channel, distribution),
      );
      return event.messageId;
    }
    // Plain JavaScript may pass anything: encodeEvents refuses it with a typed error.
    const list: readonly unknown[] = Array.isArray(target) ? target : [target];
    const encoded = encodeEvents(list, third, limits);
    if (encoded.length === 0) return [];
    await insertCreated(encoded, (traced) =>
      insertAll(tx, store.names, traced, channel, distribution),
    );
    return encoded.map((e) => e.messageId);
  }

  function add(
    tx: Tx,
    events: OutboxEvent | readonly OutboxEvent[],
    options?: AddOptions,
  ): Promise<string[]>;
  function add<M extends MessageType>(
    tx: Tx,
    message: M,
    payload: MessagePayload<M>,
    options?: AddMessageOptions,
  ): Promise<string>;
  async function add(
    tx: Tx,
    target: unknown,
    third?: unknown,
    fourth?: unknown,
  ): Promise<string[] | string> {
    // Refuses what is not an open transaction of the adapter's library, before any SQL.
    const sql = transactions.enter(tx);
    try {
      return await addIn(sql, target, third, fourth);
    } catch (error) {
      // A statement failed earlier in `tx` where the library keeps no state to tell (knex),
      // or its answer was not read yet: the server's refusal, as the adapters' own.
      if ((error as { code?: unknown } | null)?.code !== '25P02') throw error;
      throw new InvalidTransactionError(
        transactions.library,
        'failed',
        'a statement failed in the transaction: PostgreSQL refuses every statement until it rolls back',
      );
    }
  }
  return Object.assign({ add }, { [ADD_IN]: addIn });
}

/**
 * Binds an outbox to one handler's transaction and incoming message: ids are derived from
 * consumer + incoming id + index (so a retried handler emits the same ids) and causation,
 * correlation, trace and tenant headers are set. Successive `add` calls continue the index.
 * What the inbox gives handlers as `ctx.outbox`; elsewhere use
 * `outbox.add(trx, events, { cause, startIndex })`. @internal
 */
export function bindOutbox<Tx>(
  outbox: Outbox<Tx>,
  trx: Tx,
  tx: SqlRunner,
  cause: EventCause,
  startIndex = 0,
): HandlerOutbox {
  // An outbox made by createOutbox writes through the transaction the inbox entered already.
  const addIn = (outbox as { [ADD_IN]?: AddIn })[ADD_IN];
  let next = startIndex;
  function add(events: OutboxEvent | readonly OutboxEvent[]): Promise<string[]>;
  function add<M extends MessageType>(
    message: M,
    payload: MessagePayload<M>,
    options?: MessageEventOptions,
  ): Promise<string>;
  async function add(
    target: unknown,
    payload?: unknown,
    options?: unknown,
  ): Promise<string[] | string> {
    const index = next;
    if (isMessageType(target)) {
      next += 1;
      const given = handlerMessageOptions(options, cause, index);
      if (addIn !== undefined) return addIn(tx, target, payload, given) as Promise<string>;
      return outbox.add(trx, target, payload, given);
    }
    const events = target as OutboxEvent | readonly OutboxEvent[];
    next += Array.isArray(events) ? events.length : 1;
    if (addIn !== undefined) {
      return addIn(tx, events, { cause, startIndex: index }) as Promise<string[]>;
    }
    return outbox.add(trx, events, { cause, startIndex: index });
  }
  return { add };
}
