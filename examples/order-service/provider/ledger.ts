/**
 * The fake payment provider's books: one charge per idempotency key, and one line per call.
 * Two kinds: in memory (the one-process demo) and in PostgreSQL tables of the provider's own
 * schema (the multi-process example, where the provider is killed too and must not forget
 * what it charged).
 */
import pg from 'pg';

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

/** Creates the provider's tables in `schema` (idempotent). */
export async function createLedgerTables(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`create schema if not exists "${schema}"`);
  await pool.query(
    `create table if not exists "${schema}".charges (
       idempotency_key text primary key,
       payment_id text not null,
       order_id text not null,
       amount_cents integer not null,
       currency text not null,
       created_at timestamptz not null default clock_timestamp()
     )`,
  );
  await pool.query(
    `create table if not exists "${schema}".calls (
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

/** Books in the tables of `schema` (see {@link createLedgerTables}). */
export function sqlLedger(connectionString: string, schema: string): Ledger {
  const pool = new pg.Pool({ connectionString, max: 8 });
  const charges = `"${schema}".charges`;
  const calls = `"${schema}".calls`;
  return {
    async charge(key, request) {
      // The key's first call inserts; every later one reads the stored charge. The read is a
      // statement of its own: one that raced the insert must see it committed.
      const inserted = await pool.query<ChargeRow>(
        `insert into ${charges} (idempotency_key, payment_id, order_id, amount_cents, currency)
         values ($1, $2, $3, $4, $5)
         on conflict (idempotency_key) do nothing
         returning payment_id, order_id, amount_cents, currency`,
        [key, newPaymentId(), request.orderId, request.amountCents, request.currency],
      );
      const replayed = inserted.rows.length === 0;
      const row = replayed
        ? (
            await pool.query<ChargeRow>(
              `select payment_id, order_id, amount_cents, currency from ${charges}
                where idempotency_key = $1`,
              [key],
            )
          ).rows[0]
        : inserted.rows[0];
      if (row === undefined) throw new Error(`charge ${key} vanished`);
      const charge: Charge = {
        paymentId: row.payment_id,
        orderId: row.order_id,
        amountCents: row.amount_cents,
        currency: row.currency,
        status: 'captured',
      };
      return { charge, replayed };
    },
    async recordCall(outcome, slow) {
      await pool.query(`insert into ${calls} (outcome, slow) values ($1, $2)`, [outcome, slow]);
    },
    async stats() {
      const { rows } = await pool.query<Record<keyof ProviderStats, string>>(
        `select (select count(*) from ${calls}) as calls,
                (select count(*) from ${charges}) as charges,
                (select count(*) from ${calls} where outcome = 'replayed') as "duplicateCalls",
                (select count(*) from ${calls} where outcome = 'unavailable') as unavailable,
                (select count(*) from ${calls} where slow) as slow`,
      );
      const row = rows[0];
      return {
        calls: Number(row?.calls ?? 0),
        charges: Number(row?.charges ?? 0),
        duplicateCalls: Number(row?.duplicateCalls ?? 0),
        unavailable: Number(row?.unavailable ?? 0),
        slow: Number(row?.slow ?? 0),
      };
    },
    async chargedOrders() {
      const { rows } = await pool.query<{ order_id: string }>(`select order_id from ${charges}`);
      return rows.map((r) => r.order_id);
    },
    close: () => pool.end(),
  };
}
