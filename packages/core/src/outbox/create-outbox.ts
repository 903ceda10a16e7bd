import type { Knex } from 'knex';
import { optionKeys, positiveIntegerOption, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { isMessageType, type MessagePayload, type MessageType } from '../messages/message-type';
import type { Store } from '../store/store';
import { encodeMessage, handlerMessageOptions } from './add-message';
import { outboxChannel } from './channel';
import { encodeEvents, type EventLimits } from './encode';
import { NotATransactionError } from './errors/not-a-transaction-error';
import { insertAll } from './insert-all';
import type {
  AddMessageOptions,
  AddOptions,
  EventCause,
  HandlerOutbox,
  MessageEventOptions,
  Outbox,
  OutboxEvent,
} from './types';

/** Options of {@link createOutbox}. */
export interface OutboxOptions {
  /** Where events are stored; the same store the relay reads. */
  readonly store: Store;
  /**
   * Queue a `pg_notify` on the outbox channel in the adding transaction, so a listening
   * relay wakes at commit instead of at its next poll. Default `true`.
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

const OUTBOX_KEYS = optionKeys<OutboxOptions>()([
  'store',
  'notify',
  'maxKeyLength',
  'maxDestinationLength',
  'maxMessageIdLength',
  'maxPayloadBytes',
]);

/** True for an open knex transaction (`knex.transaction()` or the callback's `trx`). */
function isOpenTransaction(value: unknown): value is Knex.Transaction {
  if (typeof value !== 'function' && (typeof value !== 'object' || value === null)) return false;
  const trx = value as { isTransaction?: unknown; isCompleted?: unknown; raw?: unknown };
  if (trx.isTransaction !== true || typeof trx.raw !== 'function') return false;
  return typeof trx.isCompleted !== 'function' || (trx.isCompleted as () => boolean)() === false;
}

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
export function createOutbox(options: OutboxOptions): Outbox {
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
  const channel = options.notify === false ? null : outboxChannel(store.names);

  function add(
    trx: Knex.Transaction,
    events: OutboxEvent | readonly OutboxEvent[],
    options?: AddOptions,
  ): Promise<string[]>;
  function add<M extends MessageType>(
    trx: Knex.Transaction,
    message: M,
    payload: MessagePayload<M>,
    options?: AddMessageOptions,
  ): Promise<string>;
  async function add(
    trx: Knex.Transaction,
    target: unknown,
    third?: unknown,
    fourth?: unknown,
  ): Promise<string[] | string> {
    if (!isOpenTransaction(trx)) {
      throw new NotATransactionError(
        "outbox.add needs an open knex transaction (store.knex.transaction(...)); events are only written inside the caller's transaction",
        { given: trx === null ? 'null' : typeof trx },
      );
    }
    if (isMessageType(target)) {
      const event = await encodeMessage(target, third, fourth, limits);
      await insertAll(trx, store.names, [event], channel);
      return event.messageId;
    }
    // Plain JavaScript may pass anything: encodeEvents refuses it with a typed error.
    const list: readonly unknown[] = Array.isArray(target) ? target : [target];
    const encoded = encodeEvents(list, third, limits);
    if (encoded.length === 0) return [];
    await insertAll(trx, store.names, encoded, channel);
    const ids = encoded.map((e) => e.messageId);
    return ids;
  }
  return { add };
}

/**
 * Binds an outbox to one handler's transaction and incoming message: ids are derived from
 * consumer + incoming id + index (so a retried handler emits the same ids) and causation,
 * correlation, trace and tenant headers are set. Successive `add` calls continue the index.
 */
export function bindOutbox(
  outbox: Outbox,
  trx: Knex.Transaction,
  cause: EventCause,
  startIndex = 0,
): HandlerOutbox {
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
      return outbox.add(trx, target, payload, handlerMessageOptions(options, cause, index));
    }
    const events = target as OutboxEvent | readonly OutboxEvent[];
    next += Array.isArray(events) ? events.length : 1;
    return outbox.add(trx, events, { cause, startIndex: index });
  }
  return { add };
}
