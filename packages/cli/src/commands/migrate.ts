import { migrationStatus } from '@justonce/core';
import type { Command } from 'commander';
import { withStore, type GlobalOptions } from '../connect';
import { printJson, say } from '../format';

/**
 * `justonce migrate [--dry-run]`. A schema whose migrations knex's migrator records (or whose
 * knex table is named) is knex's to migrate: with migrations pending, store.migrate() refuses
 * (exit 2, nothing changed), so that knex's record stays whole.
 */
export function migrateCommand(program: Command, globals: () => GlobalOptions): void {
  program
    .command('migrate')
    .description("create or upgrade justonce's tables in the schema")
    .option('--dry-run', 'list the pending migrations and change nothing')
    .option('--json', 'print JSON')
    .action(async (options: { dryRun?: boolean; json?: boolean }) => {
      await withStore(
        globals(),
        async (store) => {
          if (options.dryRun) {
            const { pending, applied, recordedByKnex } = await migrationStatus(store);
            if (options.json) {
              printJson({ schema: store.schema, pending });
            } else if (pending.length === 0) {
              say(`schema ${store.schema} is up to date (${applied.length} migrations)`);
            } else {
              say(`${pending.length} pending migration(s) in schema ${store.schema}:`);
              for (const m of pending) say(`  ${String(m.version).padStart(3, '0')} ${m.name}`);
              // migrate would refuse these (core's store.migrate leaves such a schema to knex).
              if (recordedByKnex.length > 0 || store.knexMigrationsTable !== undefined) {
                say(
                  "apply them through knex's migrator (knex.migrate.latest), not justonce migrate",
                );
              }
            }
            return;
          }
          const result = await store.migrate();
          if (options.json) {
            printJson({ schema: store.schema, applied: result.applied, version: result.version });
          } else if (result.applied.length === 0) {
            say(`schema ${store.schema} is up to date (version ${result.version})`);
          } else {
            say(
              `applied ${result.applied.length} migration(s) to schema ${store.schema}: ${result.applied.join(', ')}; now at version ${result.version}`,
            );
          }
        },
        { createPglite: options.dryRun !== true },
      );
    });
}
