import type { Command } from 'commander';
import { ROW_ID } from '../arguments';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { EXIT_FAILED } from '../exit-codes';
import { printJson, table, say, complain } from '../format';
import { UsageError } from '../usage-error';
import { outboxActions } from './outbox-actions';
import { EVENT_HEAD, eventJson, eventRow, showEvent } from './outbox-rows';
import {
  OUTBOX_STATUSES,
  outboxFilterOptions,
  outboxSelection,
  parseOutboxFilters,
  type OutboxFlags,
} from './outbox-selection';

/** `justonce outbox list | show | requeue | delete`. */
export function outboxCommand(program: Command, globals: () => GlobalOptions): void {
  const group = program
    .command('outbox')
    .description('inspect, requeue and delete dead and stuck outbox events');

  outboxFilterOptions(
    group
      .command('list')
      .description(
        'outbox events in id order: dead (default), pending or stuck; exit 1 when a dead or stuck one is listed',
      ),
    OUTBOX_STATUSES,
  )
    .option('--limit <n>', 'most events to list (default 100)')
    .option('--json', 'print JSON')
    .action(async (options: OutboxFlags & { json?: boolean }) => {
      checkGlobalOptions(globals());
      const filters = parseOutboxFilters(options, [], 100);
      await withAdmin(globals(), async (admin) => {
        const events = await admin.outbox.select(outboxSelection(filters)).toArray();
        if (options.json) printJson(events.map(eventJson));
        else if (events.length === 0) say(`no ${filters.status} outbox events match`);
        else say(table(EVENT_HEAD, events.map(eventRow)));
        if (events.length > 0 && filters.status !== 'pending') process.exitCode = EXIT_FAILED;
      });
    });

  group
    .command('show')
    .description(
      'one outbox event: its facts, headers, payload and last error; exit 1 when there is none',
    )
    .argument('<id>', 'the outbox event id')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      checkGlobalOptions(globals());
      if (!ROW_ID.test(id))
        throw new UsageError(`an outbox event id is a positive integer, got ${JSON.stringify(id)}`);
      await withAdmin(globals(), async (admin, store) => {
        const event = await admin.outbox.get(id);
        if (event === undefined) {
          complain(`no outbox event ${id} in schema ${store.schema}`);
          process.exitCode = EXIT_FAILED;
        } else if (options.json) printJson(eventJson(event));
        else say(showEvent(event));
      });
    });

  outboxActions(group, globals);
}
