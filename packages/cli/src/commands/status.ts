import {
  backlogFigure,
  RESILIENCE_HEAD,
  resilienceRows,
  visibleText,
  type Admin,
  type StoreStatus,
} from '@justonce/core/admin';
import type { Command } from 'commander';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { age, printJson, printJsonLine, table, say } from '../format';
import { UsageError } from '../usage-error';
import { SLOT_HEAD, slotRow } from './slots';

/** A titled table of `status`'s screen, or `  none` (or `empty`) when it has no rows. */
function section(
  title: string,
  head: readonly string[],
  rows: readonly (readonly (string | number)[])[],
  empty = 'none',
): string {
  return `${title}\n${rows.length === 0 ? `  ${empty}` : table(head, rows)}`;
}

/** `status`'s one screen. */
export function renderStatus(status: StoreStatus): string {
  const { outbox, consumers, deadLetters, operations, retention, slots } = status;
  const screen = [
    `justonce status, schema ${status.schema}, at ${status.at.toISOString()}`,
    section(
      'Outbox',
      ['destination', 'pending', 'oldest pending', 'dead'],
      outbox.map((d) => [d.destination, d.pending, age(d.oldestPendingSeconds), d.dead]),
      'nothing pending or dead',
    ),
    section(
      'Consumers and operations, handled (last hour)',
      ['consumer / operation', 'handled', 'duplicates', 'dead-lettered'],
      consumers.map((c) => [
        c.name,
        c.handledLastHour,
        c.duplicatesLastHour,
        c.deadLetteredLastHour,
      ]),
    ),
    section(
      'Dead letters waiting (not requeued)',
      ['consumer', 'reason', 'count', 'newest'],
      deadLetters.map((d) => [d.consumer, d.reason, d.count, d.newestAt.toISOString()]),
    ),
    section(
      'Operations in progress',
      ['operation', 'in progress', 'past lease'],
      operations.map((o) => [o.operation, o.inProgress, o.pastLease]),
    ),
    [
      'Retention backlog',
      `  expired dedup records:  ${backlogFigure(retention.expiredDedupRecords, retention.countLimit)}`,
      `  published outbox rows:  ${backlogFigure(retention.publishedOutboxRows, retention.countLimit)}`,
    ].join('\n'),
  ];
  // Only stores with a consumer that has `resilience` set and reported get the section.
  if (status.resilience.length > 0) {
    screen.push(
      section(
        'Load shedding (breakers; budget and sheds over the budget window)',
        RESILIENCE_HEAD,
        status.resilience.flatMap((c) => resilienceRows(c, status.at)),
      ),
    );
  }
  // Only databases that have slots get the section: most stores never will.
  if (slots.length > 0) {
    screen.push(section('Replication slots (logical)', SLOT_HEAD, slots.map(slotRow)));
  }
  return screen.join('\n\n');
}

/** Seconds between two refreshes of `--watch`, checked. */
function parseInterval(value: string | undefined, watch: boolean): number {
  if (value === undefined) return 2;
  if (!watch) throw new UsageError('--interval goes with --watch');
  const seconds = Number(value);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(value.trim()) || seconds < 0.1 || seconds > 3600) {
    throw new UsageError(
      `--interval must be a number of seconds from 0.1 to 3600, got ${JSON.stringify(value)}`,
    );
  }
  return seconds;
}

/**
 * Refreshes until SIGINT or SIGTERM (Ctrl-C ends it with exit 0): clears the terminal each
 * time, or prints one JSON line each with --json. The signal handlers stay installed for the
 * whole loop, so a Ctrl-C during a read also ends it cleanly, after that read.
 */
async function watch(admin: Admin, intervalSeconds: number, json: boolean): Promise<void> {
  let stopped = false;
  let wake: () => void = () => undefined;
  const onSignal = () => {
    stopped = true;
    wake();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const clear = process.stdout.isTTY ? '\x1b[2J\x1b[H' : '';
  try {
    while (!stopped) {
      const status = await admin.status();
      if (json) printJsonLine(status);
      else
        process.stdout.write(
          `${clear}${visibleText(renderStatus(status))}\n\nevery ${intervalSeconds}s; Ctrl-C to stop\n${clear ? '' : '\n'}`,
        );
      if (stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalSeconds * 1000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** `justonce status [--json] [--watch [--interval s]]`; exit 1 when the schema is not migrated. */
export function statusCommand(program: Command, globals: () => GlobalOptions): void {
  program
    .command('status')
    .description(
      'outbox backlog per destination, handled per consumer in the last hour, dead letters, ' +
        'operations past their lease, retention backlog, load shedding (breakers and retry ' +
        'budgets) and logical replication slots',
    )
    .option('--watch', 'refresh until Ctrl-C (with --json: one JSON line per refresh)')
    .option('--interval <seconds>', 'seconds between refreshes with --watch (default 2)')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean; watch?: boolean; interval?: string }) => {
      checkGlobalOptions(globals());
      const interval = parseInterval(options.interval, options.watch === true);
      await withAdmin(globals(), async (admin) => {
        if (options.watch) return watch(admin, interval, options.json === true);
        const status = await admin.status();
        if (options.json) printJson(status);
        else say(renderStatus(status));
      });
    });
}
