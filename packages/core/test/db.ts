import { randomBytes } from 'node:crypto';
import { createStore, type Store, type StoreOptions } from '../src';

/** The two stores every store-backed suite runs against. */
export const STORE_KINDS = ['postgres', 'pglite'] as const;
/** Those and MySQL/MariaDB: the suites of the store contract, which every dialect passes. */
export const ALL_STORE_KINDS = [...STORE_KINDS, 'mysql'] as const;
export type StoreKind = (typeof ALL_STORE_KINDS)[number];

/** The MySQL or MariaDB URL the global setup resolved (`MYSQL_URL`). */
export function mysqlUrl(): string {
  const url = process.env.MYSQL_URL;
  if (!url) throw new Error('MYSQL_URL is not set: run the tests through `pnpm test`');
  return url;
}

/**
 * The two stores, plus PostgreSQL with the distributable schema (docs/scaling.md): for the
 * suites of what that schema changes (the outbox's keys, its inserts). Each entry is the
 * label, the kind and the store's extra options.
 */
export const STORE_VARIANTS = [
  ['postgres', 'postgres', {}],
  ['pglite', 'pglite', {}],
  ['postgres, distributable', 'postgres', { distribution: 'distributable' }],
] as const satisfies ReadonlyArray<
  readonly [string, StoreKind, Omit<StoreOptions, 'knex' | 'connectionString' | 'pglite'>]
>;
/** {@link STORE_VARIANTS} and MySQL/MariaDB, for the suites of the store contract. */
export const ALL_STORE_VARIANTS = [...STORE_VARIANTS, ['mysql', 'mysql', {}]] as const;

/**
 * The relay's per-key claim (docs/scaling.md): the store options it needs and the relay
 * option that selects it, for the relay suites that run with both claims.
 */
export const PER_KEY_CLAIM = {
  store: { distribution: 'distributable' },
  relay: { claim: 'per-key' },
} as const;

/** The PostgreSQL URL the global setup resolved. */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through `pnpm test`');
  return url;
}

/** A unique schema name, so test files never share tables. */
export function uniqueSchema(label = 't'): string {
  return `jo_${label}_${randomBytes(5).toString('hex')}`;
}

/**
 * Opens a migrated store of the given kind in a schema of its own. On PostgreSQL the schema
 * is dropped when the returned `dispose` runs.
 */
export async function openTestStore(
  kind: StoreKind,
  extra: Omit<StoreOptions, 'knex' | 'connectionString' | 'pglite'> = {},
): Promise<Store & { dispose(): Promise<void> }> {
  const schema =
    extra.schema ?? uniqueSchema({ postgres: 'pg', pglite: 'lite', mysql: 'my' }[kind]);
  const store = await createStore(
    kind === 'pglite'
      ? { ...extra, schema, pglite: {} }
      : { ...extra, schema, connectionString: kind === 'mysql' ? mysqlUrl() : databaseUrl() },
  );
  await store.migrate();
  return Object.assign(store, {
    dispose: async () => {
      if (kind === 'postgres') await store.knex.raw(`drop schema if exists "${schema}" cascade`);
      if (kind === 'mysql') await store.knex.raw(`drop database if exists \`${schema}\``);
      await store.close();
    },
  });
}
