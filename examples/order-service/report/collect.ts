/**
 * Reads what each service's tables hold at the end of a run, and counts it against the
 * orders the API accepted. The tables are read directly, to look: that is what a check of
 * "nothing doubled, nothing lost" has to do.
 */
import { rowsOf, type Store } from '@justonce/core';
import type { AcceptedOrder } from '../load/run-load';
import type { Ledger, ProviderStats } from '../provider/ledger';
import { percentile, tally, type Tally } from './tally';

/** The stores of the three services. */
export interface ServiceStores {
  readonly orders: Store;
  readonly payments: Store;
  readonly shipping: Store;
}

/** Each table counted against the accepted orders. */
export interface Ledgers {
  readonly orders: Tally;
  readonly events: Tally;
  readonly payments: Tally;
  readonly charges: Tally;
  readonly shipments: Tally;
}

/** What the tables say at the end. */
export interface Outcome {
  readonly ledgers: Ledgers;
  /** Request keys with more than one order row. */
  readonly doubledKeys: number;
  /** Events not published yet, or given up on, in both outboxes. */
  readonly pendingEvents: number;
  readonly deadEvents: number;
  /** Dead letters of the payments and shipping consumers. */
  readonly deadLetters: number;
  readonly provider: ProviderStats;
  /** From the first request of an order to its shipment, in milliseconds. */
  readonly latency: { readonly p50Ms: number; readonly p99Ms: number };
}

async function column(
  store: Store,
  sql: string,
  bindings: readonly string[] = [],
): Promise<string[]> {
  return rowsOf<{ v: string }>(await store.knex.raw(sql, bindings)).map((r) => r.v);
}

async function count(store: Store, sql: string, bindings: readonly string[] = []): Promise<number> {
  const [row] = rowsOf<{ n: string | number }>(await store.knex.raw(sql, bindings));
  return Number(row?.n ?? 0);
}

/** `column` as text: a uuid is cast on PostgreSQL; MySQL keeps it as `char(36)`. */
function asText(store: Store, column: string): string {
  return store.dialect === 'mysql' ? column : `${column}::text`;
}

/** Order ids of the events in `store`'s outbox bound for `destination`. */
function eventOrderIds(store: Store, destination: string): Promise<string[]> {
  const orderId =
    store.dialect === 'mysql'
      ? `json_unquote(json_extract(convert(payload using utf8mb4), '$.orderId'))`
      : `convert_from(payload, 'UTF8')::json->>'orderId'`;
  return column(
    store,
    `select ${orderId} as v from ${store.names.table('outbox')} where destination = ?`,
    [destination],
  );
}

/** Shipments per order (epoch ms), for the latency. */
async function shipmentTimes(store: Store): Promise<Map<string, number>> {
  // The store's MySQL sessions run in UTC, which `unix_timestamp` reads a `datetime` in.
  const epoch =
    store.dialect === 'mysql' ? 'unix_timestamp(shipped_at)' : 'extract(epoch from shipped_at)';
  const rows = rowsOf<{ order_id: string; at: string | number }>(
    await store.knex.raw(
      `select ${asText(store, 'order_id')} as order_id, ${epoch} * 1000 as at
         from ${store.names.table('shipments')}`,
    ),
  );
  return new Map(rows.map((r) => [r.order_id, Number(r.at)]));
}

/** Reads the tables of `stores` and the provider's books. */
export async function collectOutcome(
  stores: ServiceStores,
  ledger: Ledger,
  accepted: readonly AcceptedOrder[],
  orderTopic: string,
): Promise<Outcome> {
  const ids = new Set(accepted.map((a) => a.orderId));
  const { orders, payments, shipping } = stores;
  const orderRows = rowsOf<{ order_id: string; idempotency_key: string }>(
    await orders.knex.raw(
      `select ${asText(orders, 'order_id')} as order_id, idempotency_key
         from ${orders.names.table('orders')}`,
    ),
  );
  const keys = tally(
    orderRows.map((r) => r.idempotency_key),
    new Set(accepted.map((a) => a.key)),
  );
  const shipped = await shipmentTimes(shipping);
  const latencies = accepted.flatMap((a) => {
    const at = shipped.get(a.orderId);
    return at === undefined ? [] : [at - a.sentAt];
  });
  const outboxCount = async (status: string): Promise<number> =>
    (await count(
      orders,
      `select count(*) as n from ${orders.names.table('outbox')} where status = ?`,
      [status],
    )) +
    (await count(
      payments,
      `select count(*) as n from ${payments.names.table('outbox')} where status = ?`,
      [status],
    ));
  return {
    ledgers: {
      orders: tally(
        orderRows.map((r) => r.order_id),
        ids,
      ),
      events: tally(await eventOrderIds(orders, orderTopic), ids),
      payments: tally(
        await column(
          payments,
          `select ${asText(payments, 'order_id')} as v from ${payments.names.table('payments')}`,
        ),
        ids,
      ),
      charges: tally(await ledger.chargedOrders(), ids),
      shipments: tally(
        await column(
          shipping,
          `select ${asText(shipping, 'order_id')} as v from ${shipping.names.table('shipments')}`,
        ),
        ids,
      ),
    },
    doubledKeys: keys.doubles,
    pendingEvents: await outboxCount('pending'),
    deadEvents: await outboxCount('dead'),
    deadLetters:
      (await count(payments, `select count(*) as n from ${payments.names.table('dead_letters')}`)) +
      (await count(shipping, `select count(*) as n from ${shipping.names.table('dead_letters')}`)),
    provider: await ledger.stats(),
    latency: { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) },
  };
}
