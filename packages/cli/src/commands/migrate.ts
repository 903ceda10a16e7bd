import { migrationStatus } from '@justonce/core';
import type { Command } from 'commander';
import { withStore, type GlobalOptions } from '../connect';
import { printJson } from '../format';

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
            const { pending, applied } = await migrationStatus(store);
            if (options.json) {
              printJson({ schema: store.schema, pending });
            } else if (pending.length === 0) {
              console.log(`schema ${store.schema} is up to date (${applied.length} migrations)`);
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
