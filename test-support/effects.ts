/**
 * The business table the tests' handlers write their effect to, one row per effect, so a test
 * can see what effectively-once must guarantee: every message has exactly one effect. One
 * table shape for every package, wide enough for all of them: each test fills the columns it
 * needs and leaves the others null. No unique constraint on purpose: a second effect of one
 * message must be visible, not refused.
 */
import type { Knex } from 'knex';
import { rowsOf, type Store } from '@justonce/core';
import { openTestStore } from '../packages/core/test/db';

/** The quoted name of the effects table in the store's schema. */
export function effectsTable(store: Store): string {
  return store.dialect === 'mysql'
    ? `${store.names.schema}.\`effects\``
    : `${store.names.schema}."effects"`;
}

/** `count(*)` as a number column on either dialect (MySQL has no `::int`). */
function countInt(store: Store): string {
  return store.dialect === 'mysql' ? 'count(*)' : 'count(*)::int';
}

/** Creates the effects table in the store's schema (once; a second call changes nothing). */
export async function createEffectsTable(store: Store): Promise<void> {
  if (store.dialect === 'mysql') {
    // MySQL has no transaction id to default `txid` to: 0 there. Ids compare byte for byte,
    // as in PostgreSQL (the NO PAD binary collation of MariaDB, or of MySQL 8).
    const exact =
      'character set utf8mb4 collate /*M!100600 utf8mb4_nopad_bin */ /*!80017 utf8mb4_0900_bin */';
    await store.knex.raw(
      `create table if not exists ${effectsTable(store)} (
         seq bigint auto_increment primary key,
         message_id text ${exact} not null,
         scope text ${exact},
         consumer text,
         \`key\` text,
         body text,
         note text,
         txid bigint not null default 0
       ) engine=InnoDB`,
    );
    return;
  }
  await store.knex.raw(
    `create table if not exists ${effectsTable(store)} (
       seq bigserial primary key,
       message_id text not null,
       scope text,
       consumer text,
       key text,
       body text,
       note text,
       txid bigint not null default txid_current()
     )`,
  );
}

/** The columns of an effect besides its message id; all optional. */
export interface EffectFields {
  readonly scope?: string;
  /** The inbox consumer name, for tests that share one table between consumers. */
  readonly consumer?: string;
  readonly key?: string | null;
  readonly body?: string | null;
  /** Who wrote it (`child`, `takeover`, …), to tell a crashed process's work from its successor's. */
  readonly note?: string;
}

/**
 * The business write a handler makes in its transaction (`trx`): one row per effect. Given
 * the store's knex instead, the row commits at once, outside any transaction.
 */
export async function writeEffect(
  trx: Knex,
  store: Store,
  messageId: string,
  fields: EffectFields = {},
): Promise<void> {
  await trx.raw(
    `insert into ${effectsTable(store)} (message_id, scope, consumer, ${
      store.dialect === 'mysql' ? '`key`' : 'key'
    }, body, note)
     values (?, ?, ?, ?, ?, ?)`,
    [
      messageId,
      fields.scope ?? null,
      fields.consumer ?? null,
      fields.key ?? null,
      fields.body ?? null,
      fields.note ?? null,
    ],
  );
}

/**
 * The remote call a `ctx.once` step makes in the ledger's crash tests, standing in for a
 * payment provider: a row noted `remote` with the idempotency key the step was given, written
 * on the store's own connection, so that no rollback of the handler's transaction undoes it.
 */
export async function writeRemoteEffect(
  store: Store,
  messageId: string,
  key: string,
  consumer?: string,
): Promise<void> {
  await writeEffect(store.knex, store, messageId, { consumer, key, note: 'remote' });
}

/** The keys of a message's remote calls ({@link writeRemoteEffect}), in the order made. */
export async function remoteEffectKeys(store: Store, messageId: string): Promise<string[]> {
  const key = store.dialect === 'mysql' ? '`key`' : 'key';
  const result = await store.knex.raw(
    `select ${key} as k from ${effectsTable(store)}
      where message_id = ? and note = 'remote' order by seq`,
    [messageId],
  );
  return rowsOf<{ k: string }>(result).map((r) => r.k);
}

/** Narrows which effects a count or listing sees. */
export interface EffectFilter {
  readonly scope?: string;
  readonly consumer?: string;
}

function where(
  filter: EffectFilter & { readonly messageId?: string },
): [string, Knex.RawBinding[]] {
  const clauses: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  for (const [column, value] of [
    ['message_id', filter.messageId],
    ['scope', filter.scope],
    ['consumer', filter.consumer],
  ] as const) {
    if (value === undefined) continue;
    clauses.push(`${column} = ?`);
    bindings.push(value);
  }
  return [clauses.length > 0 ? `where ${clauses.join(' and ')}` : '', bindings];
}

/** How many effects a message has (all messages' when `messageId` is omitted). */
export async function countEffects(
  store: Store,
  messageId?: string,
  filter: EffectFilter = {},
): Promise<number> {
  const [clause, bindings] = where({ ...filter, messageId });
  const result = await store.knex.raw(
    `select ${countInt(store)} as n from ${effectsTable(store)} ${clause}`,
    bindings,
  );
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
}

/** Effects per message id: an id with no effect is absent. */
export async function effectCounts(
  store: Store,
  filter: EffectFilter = {},
): Promise<Map<string, number>> {
  const [clause, bindings] = where(filter);
  const result = await store.knex.raw(
    `select message_id, ${countInt(store)} as n from ${effectsTable(store)} ${clause} group by message_id`,
    bindings,
  );
  return new Map(
    rowsOf<{ message_id: string; n: number | string }>(result).map((r) => [
      r.message_id,
      Number(r.n),
    ]),
  );
}

/** One effect row, as {@link listEffects} returns it. */
export interface EffectRow {
  readonly messageId: string;
  readonly note: string | null;
}

/** The effects in commit order (the order their rows were written). */
export async function listEffects(store: Store, filter: EffectFilter = {}): Promise<EffectRow[]> {
  const [clause, bindings] = where(filter);
  const result = await store.knex.raw(
    `select message_id, note from ${effectsTable(store)} ${clause} order by seq`,
    bindings,
  );
  return rowsOf<{ message_id: string; note: string | null }>(result).map((r) => ({
    messageId: r.message_id,
    note: r.note,
  }));
}

/**
 * Where the counts break exactly-once for the expected ids: the ids with more than one
 * effect, the ids with none, and the ids that should not have any. All three empty is the
 * guarantee; naming the ids makes a failure say which messages went wrong.
 */
export function doubledAndMissing(
  counts: ReadonlyMap<string, number>,
  expected: Iterable<string>,
): { doubled: string[]; missing: string[]; unexpected: string[] } {
  const wanted = new Set(expected);
  const doubled = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  const missing = [...wanted].filter((id) => !counts.has(id));
  const unexpected = [...counts.keys()].filter((id) => !wanted.has(id));
  return { doubled: doubled.sort(), missing: missing.sort(), unexpected: unexpected.sort() };
}

/** A migrated PostgreSQL store in a schema of its own, with the effects table. */
export interface EffectsStore extends Store {
  readonly effectsTable: string;
  /** Effects per message id (of one consumer when given). */
  effectCounts(consumer?: string): Promise<Map<string, number>>;
  /** Effect rows of a consumer in commit order. */
  effects(consumer: string): Promise<EffectRow[]>;
  /** Drops the schema and closes the store. */
  dispose(): Promise<void>;
}

/** Opens a migrated PostgreSQL store in a fresh schema, with the effects table. */
export async function openEffectsStore(): Promise<EffectsStore> {
  const store = await openTestStore('postgres');
  await createEffectsTable(store);
  return Object.assign(store, {
    effectsTable: effectsTable(store),
    effectCounts: (consumer?: string) => effectCounts(store, { consumer }),
    effects: (consumer: string) => listEffects(store, { consumer }),
  });
}
