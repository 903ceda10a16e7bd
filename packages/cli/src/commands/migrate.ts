import { createKnexMigrationSource } from '@justonce/core';
import type { Command } from 'commander';
import { withStore, type GlobalOptions } from '../connect';
import { printJson } from '../format';
import { appliedVersions } from '../applied-migrations';

/** `justonce migrate [--dry-run]`. */
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
            // The public list of migrations: the knex source serves the same ones store.migrate() runs.
            const all = await createKnexMigrationSource({ schema: store.schema }).getMigrations([]);
            const applied = await appliedVersions(store);
            const pending = all.filter((m) => !applied.has(m.version));
            if (options.json) {
              printJson({
                schema: store.schema,
                pending: pending.map((m) => ({ version: m.version, name: m.name })),
              });
            } else if (pending.length === 0) {
              console.log(`schema ${store.schema} is up to date (${all.length} migrations)`);
            } else {
              console.log(`${pending.length} pending migration(s) in schema ${store.schema}:`);
              for (const m of pending)
                console.log(`  ${String(m.version).padStart(3, '0')} ${m.name}`);
            }
            return;
          }
          const result = await store.migrate();
          if (options.json) {
            printJson({ schema: store.schema, applied: result.applied, version: result.version });
          } else if (result.applied.length === 0) {
            console.log(`schema ${store.schema} is up to date (version ${result.version})`);
          } else {
            console.log(
              `applied ${result.applied.length} migration(s) to schema ${store.schema}: ${result.applied.join(', ')}; now at version ${result.version}`,
            );
          }
        },
        { createPglite: options.dryRun !== true },
      );
    });
}
