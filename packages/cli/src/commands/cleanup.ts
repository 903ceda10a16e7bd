import type { AdminCleanupOptions } from '@justonce/core/admin';
import type { Command } from 'commander';
import { parseInteger } from '../arguments';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { formatDuration, parseDuration } from '../durations';
import { printJson, table, say } from '../format';

interface CleanupFlags {
  readonly retention?: string;
  readonly deadLetters?: string;
  readonly published?: string;
  readonly batchSize?: string;
  readonly json?: boolean;
}

/** Checks the durations before anything is opened; throws `UsageError`. */
function parseCleanup(flags: CleanupFlags): AdminCleanupOptions {
  return {
    ...(flags.retention === undefined
      ? {}
      : { retentionMs: parseDuration(flags.retention, '--retention') }),
    ...(flags.deadLetters === undefined
      ? {}
      : { deadLetterRetentionMs: parseDuration(flags.deadLetters, '--dead-letters') }),
    ...(flags.published === undefined
      ? {}
      : { publishedOutboxMs: parseDuration(flags.published, '--published') }),
    ...(flags.batchSize === undefined
      ? {}
      : {
          batchSize: parseInteger(flags.batchSize, '--batch-size', {
            min: 1,
            max: 100_000,
            fallback: 1000,
          }),
        }),
  };
}

/**
 * Progress on stderr, on a terminal only: the total is not known ahead (the run deletes in
 * batches until a batch comes back short), so a running count per table, not a bar.
 */
function progress(): AdminCleanupOptions['onBatch'] {
  if (!process.stderr.isTTY) return undefined;
  const deleted = new Map<string, number>();
  return (batch) => {
    deleted.set(batch.table, (deleted.get(batch.table) ?? 0) + batch.deleted);
    const line = [...deleted].map(([t, n]) => `${t} ${n}`).join(', ');
    process.stderr.write(`\r\x1b[Kcleaning up: ${line}`);
  };
}

/** `justonce cleanup`. */
export function cleanupCommand(program: Command, globals: () => GlobalOptions): void {
  program
    .command('cleanup')
    .description(
      'run retention now: expired dedup records and attempt counters, published outbox rows and, ' +
        'when asked, old dead letters; prints what it deleted per table',
    )
    .option('--retention <duration>', 'keep dedup records younger than this (default 7d)')
    .option(
      '--dead-letters <duration>',
      'also delete dead letters older than this (default: keep them)',
    )
    .option('--published <duration>', 'delete published outbox rows older than this (default 24h)')
    .option('--batch-size <n>', 'rows deleted per statement, 1-100000 (default 1000)')
    .option('--json', 'print JSON')
    .action(async (flags: CleanupFlags) => {
      checkGlobalOptions(globals());
      const options = parseCleanup(flags);
      await withAdmin(globals(), async (admin) => {
        const onBatch = progress();
        const result = await admin.cleanup({ ...options, ...(onBatch ? { onBatch } : {}) });
        if (onBatch) process.stderr.write('\r\x1b[K');
        if (flags.json) {
          printJson(result);
          return;
        }
        const rows = Object.entries(result.tables).map(([name, t]) => [
          name,
          t.skipped === undefined ? t.deleted : `- (${t.skipped})`,
          t.skipped === undefined ? (t.complete ? 'yes' : 'no, run again') : '-',
        ]);
        rows.push(['outbox (published)', result.outboxDeleted, '-']);
        say(table(['table', 'deleted', 'complete'], rows));
        say(
          `deleted ${result.deleted} rows` +
            (options.retentionMs === undefined
              ? ''
              : ` (retention ${formatDuration(options.retentionMs)})`),
        );
      });
    });
}
