import type { Knex } from 'knex';

/** True for a knex on the `mysql2` (or `mysql`) client. @internal */
export function isMysqlKnex(knex: Knex): boolean {
  const client = (knex.client as { config?: { client?: unknown } }).config?.client;
  const name =
    typeof client === 'string'
      ? client
      : (client as { prototype?: { dialect?: string } })?.prototype?.dialect;
  return typeof name === 'string' && /^mysql/i.test(name);
}
