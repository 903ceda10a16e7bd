import type { Knex } from 'knex';
import type { Store } from '@justonce/core';
import type { SettledEvent } from '@justonce/core';
import type { ConsumeMessage } from 'amqplib';
import type { RabbitConnectionEvent } from '../src';

/** A settled event as the log keeps it, tagged to tell it from a connection event. */
export type LoggedSettled = { readonly type: 'settled' } & SettledEvent<unknown, ConsumeMessage>;

/** What {@link EventLog} records: the consumer's `onSettled` and `onConnection` events. */
export type LoggedEvent = LoggedSettled | RabbitConnectionEvent;

/** Creates the business table the test handlers write to: one row per applied effect. */
export async function createEffectsTable(store: Store): Promise<void> {
  await store.knex.raw(
    `create table if not exists ${store.names.schema}."effects" (
       id bigserial primary key, message_id text not null, note text)`,
  );
}

/** The business write: one row per applied effect, in the handler's transaction. */
export async function writeEffect(
  trx: Knex.Transaction,
  store: Store,
  messageId: string,
  note = '',
): Promise<void> {
  await trx.raw(`insert into ${store.names.schema}."effects" (message_id, note) values (?, ?)`, [
    messageId,
    note,
  ]);
}

/** Applied effects per message id. */
export async function effectCounts(store: Store): Promise<Record<string, number>> {
  const result = await store.knex.raw<{ rows: Array<{ message_id: string; n: string }> }>(
    `select message_id, count(*) as n from ${store.names.schema}."effects" group by message_id`,
  );
  return Object.fromEntries(result.rows.map((r) => [r.message_id, Number(r.n)]));
}

/** Collects consumer events and lets a test wait for one. */
export class EventLog {
  readonly events: LoggedEvent[] = [];
  private waiters: Array<{ match: (e: LoggedEvent) => boolean; resolve: () => void }> = [];

  readonly onSettled = (event: SettledEvent<unknown, ConsumeMessage>): void => {
    this.record({ type: 'settled', ...event });
  };

  readonly onConnection = (event: RabbitConnectionEvent): void => {
    this.record(event);
  };

  /** Both hooks, to spread into the consumer's options. */
  get hooks(): {
    onSettled: (event: SettledEvent<unknown, ConsumeMessage>) => void;
    onConnection: (event: RabbitConnectionEvent) => void;
  } {
    return { onSettled: this.onSettled, onConnection: this.onConnection };
  }

  private record(event: LoggedEvent): void {
    this.events.push(event);
    this.waiters = this.waiters.filter((w) => {
      if (!w.match(event)) return true;
      w.resolve();
      return false;
    });
  }

  /** Settled events (`held` included) with the given action, in order. */
  settled(action?: string): LoggedSettled[] {
    return this.events.filter(
      (e): e is LoggedSettled =>
        e.type === 'settled' && (action === undefined || e.action === action),
    );
  }

  /** Resolves at the next event matching `match` (or at once if one was already seen). */
  next(
    what: string,
    match: (e: LoggedEvent) => boolean,
    timeoutMs = 15_000,
    includePast = false,
  ): Promise<void> {
    if (includePast && this.events.some(match)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
        timeoutMs,
      );
      this.waiters.push({
        match,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/** A promise with its resolver, for gating handlers. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
