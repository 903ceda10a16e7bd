/**
 * The fake payment provider's books: one charge per idempotency key, and one line per call.
 * Two kinds: in memory (the one-process demo) and in tables of the provider's own schema, on
 * PostgreSQL or MySQL/MariaDB (the multi-process example, where the provider is killed too
 * and must not forget what it charged).
 */
import { createStore, rowsOf, type Store } from '@justonce/core';

/** What the payments service asks the provider to charge. */
export interface ChargeRequest {
  readonly orderId: string;
  readonly amountCents: number;
  readonly currency: string;
}

/** A charge the provider made. */
export interface Charge extends ChargeRequest {
  readonly paymentId: string;
  readonly status: 'captured';
}

/** What became of one call. */
export type CallOutcome =
  /** A new charge. */
  | 'charged'
  /** A call with a key already charged: the stored charge is answered, nothing is charged. */
  | 'replayed'
  /** Answered 503 before charging anything. */
  | 'unavailable';

/** The provider's counters. */
export interface ProviderStats {
  /** Calls received, of every outcome. */
  readonly calls: number;
  /** Charges made: one per idempotency key. */
  readonly charges: number;
  /** Calls that came again with a key already charged. */
  readonly duplicateCalls: number;
  /** Calls answered 503. */
  readonly unavailable: number;
  /** Calls answered only after the client's time limit. */
  readonly slow: number;
}

/** The provider's books. */
export interface Ledger {
  /** Charges `request` under `key` once; a later call with the key gets the same charge. */
  charge(key: string, request: ChargeRequest): Promise<{ charge: Charge; replayed: boolean }>;
  /** Notes one call. */
  recordCall(outcome: CallOutcome, slow: boolean): Promise<void>;
  stats(): Promise<ProviderStats>;
  /** The order id of every charge, one entry per charge (an order charged twice shows twice). */
  chargedOrders(): Promise<string[]>;
  close(): Promise<void>;
}

function newPaymentId(): string {
  return `pay_${crypto.randomUUID()}`;
}

/** Books in memory. */
export function memoryLedger(): Ledger {
  const charges = new Map<string, Charge>();
  const calls: { outcome: CallOutcome; slow: boolean }[] = [];
  return {
    async charge(key, request) {
      const known = charges.get(key);
      if (known !== undefined) return { charge: known, replayed: true };
      const charge: Charge = { ...request, paymentId: newPaymentId(), status: 'captured' };
      charges.set(key, charge);
      return { charge, replayed: false };
    },
    async recordCall(outcome, slow) {
      calls.push({ outcome, slow });
    },
    async stats() {
      const count = (outcome: CallOutcome) => calls.filter((c) => c.outcome === outcome).length;
      return {
        calls: calls.length,
        charges: charges.size,
        duplicateCalls: count('replayed'),
        unavailable: count('unavailable'),
        slow: calls.filter((c) => c.slow).length,
      };
    },
    async chargedOrders() {
      return [...charges.values()].map((c) => c.orderId);
    },
    async close() {},
  };
}

/**
 * Creates the provider's schema (on MySQL, its database) and tables, if missing. `store` is
 * opened on that schema; it needs no migration.
 */
export async function createLedgerTables(store: Store): Promise<void> {
  const { names } = store;
  if (store.dialect === 'mysql') {
    await store.knex.raw(`create database if not exists ${names.schema}`);
    // The key is compared byte for byte, as PostgreSQL's text is.
    await store.knex.raw(
      `create table if not exists ${names.table('charges')} (
         idempotency_key varbinary(255) primary key,
         payment_id varchar(255) not null,
         order_id varchar(255) not null,
         amount_cents integer not null,
         currency varchar(255) not null,
         created_at datetime(6) not null default current_timestamp(6)
       )`,
    );
    await store.knex.raw(
      `create table if not exists ${names.table('calls')} (
         id bigint auto_increment primary key,
         outcome varchar(32) not null,
         slow boolean not null,
         at datetime(6) not null default current_timestamp(6)
       )`,
    );
    return;
  }
  await store.knex.raw(`create schema if not exists ${names.schema}`);
  await store.knex.raw(
    `create table if not exists ${names.table('charges')} (
       idempotency_key text primary key,
       payment_id text not null,
       order_id text not null,
       amount_cents integer not null,
       currency text not null,
       created_at timestamptz not null default clock_timestamp()
     )`,
  );
  await store.knex.raw(
    `create table if not exists ${names.table('calls')} (
       id bigint generated always as identity primary key,
       outcome text not null,
       slow boolean not null,
       at timestamptz not null default clock_timestamp()
     )`,
  );
}

interface ChargeRow {
  payment_id: string;
  order_id: string;
  amount_cents: number;
  currency: string;
}

/** True for MySQL's duplicate-key error (`ER_DUP_ENTRY`). */
function isDuplicateKey(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ER_DUP_ENTRY';
}

/**
 * Inserts the charge `paymentId` of `request` under `key`; resolves to whether this call
 * inserted it (`false`: the key has a charge already).
 */
async function insertCharge(
  store: Store,
  key: string,
  paymentId: string,
  request: ChargeRequest,
): Promise<boolean> {
  const insert = `insert into ${store.names.table('charges')}
      (idempotency_key, payment_id, order_id, amount_cents, currency) values (?, ?, ?, ?, ?)`;
  const values = [key, paymentId, request.orderId, request.amountCents, request.currency];
  if (store.dialect !== 'mysql') {
    const inserted = await store.knex.raw(
      `${insert} on conflict (idempotency_key) do nothing returning 1`,
      values,
    );
    return rowsOf(inserted).length > 0;
  }
  try {
    await store.knex.raw(insert, values);
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}

/**
 * Books in the tables of `schema` (see {@link createLedgerTables}) on the PostgreSQL or
 * MySQL/MariaDB at `connectionString`.
 */
export async function sqlLedger(connectionString: string, schema: string): Promise<Ledger> {
  const store = await createStore({ connectionString, schema, pool: { max: 8 } });
  const { knex, names } = store;
  const charges = names.table('charges');
  const calls = names.table('calls');
  return {
    async charge(key, request) {
      // The key's first call inserts; every later one reads the stored charge. The read is a
      // statement of its own: one that raced the insert must see it committed.
      const paymentId = newPaymentId();
      if (await insertCharge(store, key, paymentId, request)) {
        return { charge: { ...request, paymentId, status: 'captured' }, replayed: false };
      }
      const [row] = rowsOf<ChargeRow>(
        await knex.raw(
          `select payment_id, order_id, amount_cents, currency from ${charges}
            where idempotency_key = ?`,
          [key],
        ),
      );
      if (row === undefined) throw new Error(`charge ${key} vanished`);
      const charge: Charge = {
        paymentId: row.payment_id,
        orderId: row.order_id,
        amountCents: row.amount_cents,
        currency: row.currency,
        status: 'captured',
      };
      return { charge, replayed: true };
    },
    async recordCall(outcome, slow) {
      await knex.raw(`insert into ${calls} (outcome, slow) values (?, ?)`, [outcome, slow]);
    },
    async stats() {
      const [row] = rowsOf<
        Record<'calls' | 'charges' | 'duplicates' | 'unavailable' | 'slow', string | number>
      >(
        await knex.raw(
          `select (select count(*) from ${calls}) as calls,
                  (select count(*) from ${charges}) as charges,
                  (select count(*) from ${calls} where outcome = 'replayed') as duplicates,
                  (select count(*) from ${calls} where outcome = 'unavailable') as unavailable,
                  (select count(*) from ${calls} where slow) as slow`,
        ),
      );
      return {
        calls: Number(row?.calls ?? 0),
        charges: Number(row?.charges ?? 0),
        duplicateCalls: Number(row?.duplicates ?? 0),
        unavailable: Number(row?.unavailable ?? 0),
        slow: Number(row?.slow ?? 0),
      };
    },
    async chargedOrders() {
      return rowsOf<{ order_id: string }>(await knex.raw(`select order_id from ${charges}`)).map(
        (r) => r.order_id,
      );
    },
    close: () => store.close(),
  };
}
