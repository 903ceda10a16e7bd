/**
 * The demo's stores. On PGlite (the default) one embedded database holds the three services'
 * schemas, and the payments service's charge records get a second one: PGlite has a single
 * connection, which the payments handler's inbox transaction holds while the charge runs,
 * and the charge's record is written in transactions of its own. On PostgreSQL
 * (`DATABASE_URL`) each service has its schema, named for the run and dropped at the end; on
 * MySQL or MariaDB (a `mysql://` URL) its database, named and dropped the same way.
 */
import { randomBytes } from 'node:crypto';
import { createStore, rowsOf, type Store } from '@justonce/core';
import type { ServiceStores } from '../report/collect';

/** The stores of a demo run. */
export interface DemoStores extends ServiceStores {
  /** Where the payments service's charge records live. */
  readonly charges: Store;
  /** `PGlite`, `PostgreSQL`, `MySQL` or `MariaDB`. */
  readonly label: string;
  /** Closes everything; on a server, drops the run's schemas (MySQL: databases) first. */
  close(): Promise<void>;
}

async function onPglite(): Promise<DemoStores> {
  const orders = await createStore({ pglite: {}, schema: 'orders' });
  const payments = await createStore({ knex: orders.knex, schema: 'payments' });
  const shipping = await createStore({ knex: orders.knex, schema: 'shipping' });
  const charges = await createStore({ pglite: {}, schema: 'charges' });
  return {
    orders,
    payments,
    shipping,
    charges,
    label: 'PGlite',
    // The stores made on `orders.knex` own nothing: closing `orders` closes their database.
    close: async () => {
      await Promise.all([orders.close(), charges.close()]);
    },
  };
}

/** `MariaDB` or `MySQL`, as the server says. */
async function mysqlLabel(store: Store): Promise<string> {
  const [row] = rowsOf<{ v: string }>(await store.knex.raw('select version() as v'));
  return row?.v.includes('MariaDB') ? 'MariaDB' : 'MySQL';
}

/** On PostgreSQL, MySQL or MariaDB: each service in a schema (MySQL: a database) of the run. */
async function onServer(connectionString: string): Promise<DemoStores> {
  const run = randomBytes(3).toString('hex');
  const open = (name: string) =>
    createStore({ connectionString, schema: `demo_${run}_${name}`, pool: { max: 12 } });
  const orders = await open('orders');
  const payments = await open('payments');
  const shipping = await open('shipping');
  const all = [orders, payments, shipping];
  const mysql = orders.dialect === 'mysql';
  return {
    orders,
    payments,
    shipping,
    charges: payments,
    label: mysql ? await mysqlLabel(orders) : 'PostgreSQL',
    close: async () => {
      for (const store of all) {
        await store.knex.raw(
          mysql
            ? `drop database if exists ${store.names.schema}`
            : `drop schema if exists ${store.names.schema} cascade`,
        );
      }
      await Promise.all(all.map((store) => store.close()));
    },
  };
}

/**
 * Opens and migrates the demo's stores: on `databaseUrl` (PostgreSQL, or MySQL/MariaDB with a
 * `mysql://` URL), or on PGlite when it is undefined.
 */
export async function openDemoStores(databaseUrl: string | undefined): Promise<DemoStores> {
  const stores = databaseUrl === undefined ? await onPglite() : await onServer(databaseUrl);
  for (const store of new Set([stores.orders, stores.payments, stores.shipping, stores.charges])) {
    await store.migrate();
  }
  return stores;
}
