import { rowsOf, type Store } from '@justonce/core';

/**
 * The migration versions recorded as applied in the store's schema; empty when the schema
 * or its migrations table does not exist yet. Read-only.
 */
export async function appliedVersions(store: Store): Promise<Set<number>> {
  const exists = await store.knex.raw(`select to_regclass(?) is not null as present`, [
    store.names.table('migrations'),
  ]);
  if (rowsOf<{ present: boolean }>(exists)[0]?.present !== true) return new Set();
  const result = await store.knex.raw(`select version from ${store.names.table('migrations')}`);
  return new Set(rowsOf<{ version: number | string }>(result).map((r) => Number(r.version)));
}
