import type { Knex } from 'knex';
import type { MigrationResult } from '../migrate';
import type { MigrationNames } from '../migration';
import { mysqlMigrations } from './schema';
import { mysqlRows } from '../../transactions/mysql-result';

/** How long a migrator waits for another's lock, in seconds, before failing. */
const LOCK_WAIT_S = 600;

/**
 * Brings a MySQL or MariaDB database up to date. DDL commits on its own there, so a migration
 * cannot be one transaction: its statements are written to be run again (`if not exists`),
 * and its version is recorded only after they all ran. Several processes may migrate at
 * once: a named lock (`get_lock`) held on one connection orders them. @internal
 */
export async function migrateMysql(knex: Knex, names: MigrationNames): Promise<MigrationResult> {
  const table = names.table('migrations');
  const lock = `justonce:${names.schema}:${names.raw('migrations')}`;
  await knex.raw(`create database if not exists ${names.schema} character set utf8mb4`);
  // A transaction pins one connection, which owns the named lock until it is released.
  return knex.transaction(async (trx) => {
    const got = mysqlRows<{ got: number | null }>(
      await trx.raw('select get_lock(?, ?) as got', [lock, LOCK_WAIT_S]),
    );
    if (Number(got[0]?.got) !== 1) throw new Error(`could not take the migration lock ${lock}`);
    try {
      await trx.raw(
        `create table if not exists ${table} (
           version integer primary key,
           name varchar(255) not null,
           applied_at datetime(6) not null default current_timestamp(6)
         ) engine=InnoDB`,
      );
      const done = new Set(
        mysqlRows<{ version: number }>(await trx.raw(`select version from ${table}`)).map((r) =>
          Number(r.version),
        ),
      );
      const applied: number[] = [];
      for (const migration of mysqlMigrations) {
        if (done.has(migration.version)) continue;
        for (const statement of migration.up(names)) await trx.raw(statement);
        await trx.raw(`insert into ${table} (version, name) values (?, ?)`, [
          migration.version,
          migration.name,
        ]);
        applied.push(migration.version);
        done.add(migration.version);
      }
      return { applied, version: Math.max(0, ...done) };
    } finally {
      await trx.raw('select release_lock(?)', [lock]);
    }
  });
}
