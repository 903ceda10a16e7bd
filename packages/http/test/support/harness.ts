/**
 * Runs a table of cases against each adapter: one store per test file, one server per
 * adapter and distinct route configuration, all closed after the suite.
 */
import { createOperations, type OperationsOptions } from '@justonce/core';
import type { StoreKind } from '../../../core/test/db';
import type { Adapter, RouteOptions, RunningApp } from './adapters';
import { openOrdersEnv, type OrdersEnv } from './orders';

/** One row of a semantics table: the case, its route configuration, and its checks. */
export interface Row {
  /** The case, as in the table of docs/http.md. */
  readonly case: string;
  /** In the light subset that also runs on PGlite (no concurrency: PGlite has one connection). */
  readonly pglite?: boolean;
  readonly route?: Omit<RouteOptions, 'operations'>;
  readonly operations?: Omit<OperationsOptions, 'store'>;
  run(app: RunningApp, env: OrdersEnv): Promise<void>;
}

/** The servers of the adapters on one store, started on first use. */
export interface Apps {
  env(): OrdersEnv;
  app(adapter: Adapter, row: Pick<Row, 'route' | 'operations'>): Promise<RunningApp>;
}

/**
 * Registers beforeAll/afterAll hooks that open one store (of `kind`) and, at the end, close
 * every server started and the store; returns the accessors the tests use. Every adapter
 * shares the store: each test uses keys and items of its own.
 */
export function openApps(kind: StoreKind = 'postgres'): Apps {
  let env: OrdersEnv | undefined;
  const apps = new Map<string, Promise<RunningApp>>();
  beforeAll(async () => {
    env = await openOrdersEnv(kind);
  });
  afterAll(async () => {
    for (const app of apps.values()) await (await app).close();
    await env?.store.dispose();
  });
  const current = (): OrdersEnv => {
    if (env === undefined) throw new Error('the store is not open yet');
    return env;
  };
  return {
    env: current,
    app(adapter, row) {
      const id = JSON.stringify([adapter.name, row.route ?? {}, row.operations ?? {}]);
      let app = apps.get(id);
      if (app === undefined) {
        const orders = current();
        const operations = createOperations({ ...row.operations, store: orders.store });
        const route = row.route ?? {};
        app = adapter.start(orders, {
          ...route,
          operations,
        });
        apps.set(id, app);
      }
      return app;
    },
  };
}

/** Runs every row of `rows` for each adapter, on one store of `kind`. */
export function runTable(
  adapters: readonly Adapter[],
  rows: readonly Row[],
  kind: StoreKind = 'postgres',
): void {
  const apps = openApps(kind);
  describe.each(adapters.map((adapter) => [adapter.name, adapter] as const))(
    '%s',
    (_name, adapter) => {
      it.each(rows.map((row) => [row.case, row] as const))('%s', async (_case, row) => {
        await row.run(await apps.app(adapter, row), apps.env());
      });
    },
  );
}
