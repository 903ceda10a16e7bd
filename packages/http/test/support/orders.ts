import { sleep } from '@justonce/core/transport';
/**
 * The application every adapter serves in the tests: an orders API whose handler writes an
 * order row and an outbox event in the request's transaction, then answers as the request
 * body asks (`behaviour`), so one table of cases drives all three frameworks.
 */
import { createOutbox, type Logger, type Outbox, type Store } from '@justonce/core';
import type { Knex } from 'knex';
import { openTestStore, type StoreKind } from '../../../core/test/db';

/** What the handler does, chosen by the request body's `behaviour` field. */
export type Behaviour =
  /** 201 with a JSON order, a `location` and an `x-first-only` header. */
  | 'create'
  /** 400 JSON, nothing written. */
  | 'bad-request'
  /** Writes the order, then answers 503: the route must roll it back. */
  | 'server-error'
  /** Writes the order, then throws. */
  | 'throw'
  /** Writes the order, then throws an error whose own status is 404 (as `http-errors` do). */
  | 'throw-not-found'
  /** Like `server-error` on the item's first run, `create` after. */
  | 'server-error-once'
  /** Like `throw` on the item's first run, `create` after. */
  | 'throw-once'
  /** 201 with a text/plain body. */
  | 'text'
  /** 201 with bytes that are not UTF-8 (and a U+0000). */
  | 'binary'
  /** 204, no body. */
  | 'no-content';

/** A response as the handler describes it, for each adapter to send its own way. */
export interface AppResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | string | Record<string, unknown> | undefined;
}

/** The store, outbox and table the handler writes to. */
export interface OrdersEnv {
  readonly store: Store & { dispose(): Promise<void> };
  readonly outbox: Outbox;
  /** How many times the handler started, by key (`''` for keyless requests). */
  readonly runs: Map<string, number>;
  /** How many times the handler started, by item. */
  readonly itemRuns: Map<string, number>;
  /** The logger every adapter is given; what it got is in `logged`. */
  readonly logger: Logger;
  readonly logged: LogLine[];
}

/** One line the adapters logged. */
export interface LogLine {
  readonly level: keyof Logger;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

function capturingLogger(logged: LogLine[]): Logger {
  const at =
    (level: keyof Logger) =>
    (message: string, fields: Readonly<Record<string, unknown>> = {}): void => {
      logged.push({ level, message, fields });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Opens a migrated store with an `orders` table. */
export async function openOrdersEnv(kind: StoreKind): Promise<OrdersEnv> {
  const store = await openTestStore(kind);
  await store.knex.raw(
    `create table ${ordersTable(store)} (
       id bigserial primary key,
       client text,
       item text,
       idem_key text
     )`,
  );
  const logged: LogLine[] = [];
  return {
    store,
    outbox: createOutbox({ store, notify: false }),
    runs: new Map(),
    itemRuns: new Map(),
    logger: capturingLogger(logged),
    logged,
  };
}

export function ordersTable(store: Store): string {
  return `${store.names.schema}."orders"`;
}

/** Orders written (committed) so far, optionally for one item. */
export async function countOrders(env: OrdersEnv, item?: string): Promise<number> {
  const rows = await env.store.knex.raw<{ rows: { n: string }[] }>(
    `select count(*) as n from ${ordersTable(env.store)} ${item === undefined ? '' : 'where item = ?'}`,
    item === undefined ? [] : [item],
  );
  return Number(rows.rows[0]?.n ?? 0);
}

/** Outbox events written (committed) for one item. */
export async function countEvents(env: OrdersEnv, item: string): Promise<number> {
  const rows = await env.store.knex.raw<{ rows: { n: string }[] }>(
    `select count(*) as n from ${env.store.names.table('outbox')} where partition_key = ?`,
    [item],
  );
  return Number(rows.rows[0]?.n ?? 0);
}

/** The request as the handler reads it: its parsed JSON body (or text) and client. */
export interface OrderRequest {
  readonly body: unknown;
  readonly clientId: string | undefined;
}

/** The handler shared by every adapter. */
export async function handleOrder(
  env: OrdersEnv,
  trx: Knex.Transaction,
  key: string | undefined,
  request: OrderRequest,
): Promise<AppResponse> {
  env.runs.set(key ?? '', (env.runs.get(key ?? '') ?? 0) + 1);
  const body = isRecord(request.body) ? request.body : { item: String(request.body) };
  const item = typeof body.item === 'string' ? body.item : 'unnamed';
  const itemRun = (env.itemRuns.get(item) ?? 0) + 1;
  env.itemRuns.set(item, itemRun);
  const asked = (body.behaviour ?? 'create') as Behaviour;
  const behaviour: Behaviour =
    asked === 'server-error-once' || asked === 'throw-once'
      ? itemRun === 1
        ? asked === 'throw-once'
          ? 'throw'
          : 'server-error'
        : 'create'
      : asked;
  if (typeof body.delayMs === 'number') await sleep(body.delayMs);
  if (behaviour === 'bad-request') {
    return { status: 400, headers: {}, body: { error: 'bad request', item } };
  }
  const [row] = await trx('orders')
    .withSchema(env.store.schema)
    .insert({ client: request.clientId ?? null, item, idem_key: key ?? null })
    .returning('id');
  const id = Number((row as { id: string | number }).id);
  await env.outbox.add(trx, { destination: 'orders', key: item, payload: { id, item } });
  switch (behaviour) {
    case 'server-error':
      return { status: 503, headers: {}, body: { error: 'try later' } };
    case 'throw':
      throw new Error('the handler failed');
    case 'throw-not-found':
      throw Object.assign(new Error('the handler failed: no such customer'), {
        statusCode: 404,
        status: 404,
        expose: true,
      });
    case 'text':
      return {
        status: 201,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
        body: `order ${id} for ${item}\n`,
      };
    case 'binary':
      return {
        status: 201,
        headers: { 'content-type': 'application/octet-stream' },
        body: Buffer.from([0xff, 0x00, 0xfe, 0x80, id % 256, 0xc3]),
      };
    case 'no-content':
      return { status: 204, headers: { location: `/orders/${id}` }, body: undefined };
    default:
      return {
        status: 201,
        headers: { location: `/orders/${id}`, 'x-first-only': 'yes' },
        body: { id, item, at: new Date().toISOString() },
      };
  }
}

/** The response's body as bytes and its content type, for adapters without serializers. */
export function encodeBody(response: AppResponse): {
  bytes: Buffer | undefined;
  type: string | undefined;
} {
  const { body } = response;
  if (body === undefined) return { bytes: undefined, type: response.headers['content-type'] };
  if (Buffer.isBuffer(body)) return { bytes: body, type: response.headers['content-type'] };
  if (typeof body === 'string')
    return { bytes: Buffer.from(body, 'utf8'), type: response.headers['content-type'] };
  return {
    bytes: Buffer.from(JSON.stringify(body), 'utf8'),
    type: response.headers['content-type'] ?? 'application/json; charset=utf-8',
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export { sleep };
