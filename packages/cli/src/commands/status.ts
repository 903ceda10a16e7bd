import type { Command } from 'commander';
import { withStore, type GlobalOptions } from '../connect';
import { age, printJson, table } from '../format';
import { deadLetterStatus } from '../queries/dead-letter-status';
import { appliedVersions } from '../queries/migration-versions';
import { operationStatus } from '../queries/operation-status';
import { outboxStatus } from '../queries/outbox-status';
import { retentionStatus } from '../queries/retention-status';

/** `justonce status [--json]`; exit 1 when the schema is not migrated. */
export function statusCommand(program: Command, globals: () => GlobalOptions): void {
  program
    .command('status')
    .description('outbox backlog, dead letters, operations past their lease and retention backlog')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      await withStore(globals(), async (store) => {
        if ((await appliedVersions(store)).size === 0) {
          console.error(`schema ${store.schema} has no justonce tables; run: justonce migrate`);
          process.exitCode = 1;
          return;
        }
        const [outbox, deadLetters, operations, retention] = await Promise.all([
          outboxStatus(store),
          deadLetterStatus(store),
          operationStatus(store),
          retentionStatus(store),
        ]);
        if (options.json) {
          printJson({
            schema: store.schema,
            at: new Date(),
            outbox,
            deadLetters,
            operations,
            retention,
          });
          return;
        }
        console.log(`justonce status, schema ${store.schema}\n`);
        console.log('Outbox');
        console.log(
          outbox.length === 0
            ? '  nothing pending or dead'
            : table(
                ['destination', 'pending', 'oldest pending', 'dead'],
                outbox.map((d) => [d.destination, d.pending, age(d.oldestPendingSeconds), d.dead]),
              ),
        );
        console.log('\nDead letters waiting (not requeued)');
        console.log(
          deadLetters.length === 0
            ? '  none'
            : table(
                ['consumer', 'reason', 'count', 'newest'],
                deadLetters.map((d) => [d.consumer, d.reason, d.count, d.newestAt.toISOString()]),
              ),
        );
        console.log('\nOperations in progress');
        console.log(
          operations.length === 0
            ? '  none'
            : table(
                ['operation', 'in progress', 'past lease'],
                operations.map((o) => [o.operation, o.inProgress, o.pastLease]),
              ),
        );
        console.log('\nRetention backlog');
        console.log(`  expired dedup records:  ${retention.expiredDedupRecords}`);
        console.log(`  published outbox rows:  ${retention.publishedOutboxRows}`);
      });
    });
}
