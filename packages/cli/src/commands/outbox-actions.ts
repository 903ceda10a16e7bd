import type { Admin, OutboxEntry } from '@justonce/core';
import type { Command } from 'commander';
import { runBulk, type BulkFlags } from '../bulk';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { EXIT_FAILED } from '../exit-codes';
import { UsageError } from '../usage-error';
import { EVENT_HEAD, eventRow } from './outbox-rows';
import {
  findEvents,
  outboxFilterOptions,
  parseOutboxFilters,
  type OutboxFilters,
  type OutboxFlags,
} from './outbox-selection';

type ActionFlags = OutboxFlags & BulkFlags & { all?: boolean };

const MAX_ITEMS = 1_000_000;

function parseSelection(ids: readonly string[], flags: ActionFlags): OutboxFilters {
  const f = parseOutboxFilters(flags, ids, MAX_ITEMS);
  const narrowed =
    f.ids !== undefined ||
    f.destination !== undefined ||
    f.since !== undefined ||
    f.until !== undefined ||
    f.statusGiven;
  if (!narrowed && !flags.all) {
    throw new UsageError(
      'say which events: ids, --ids, --destination, --since or --until (or --all for every dead event)',
    );
  }
  return f;
}

/** Whether `e` passes the filters other than ids and status. */
function matches(e: OutboxEntry, f: OutboxFilters): boolean {
  if (f.destination !== undefined && e.destination !== f.destination) return false;
  if (f.since && e.createdAt < f.since) return false;
  return !(f.until && e.createdAt >= f.until);
}

/**
 * The events to act on. Named ids that do not exist, or whose status `refuse` rejects, end
 * the command before anything changes (exit 1); `undefined` then.
 */
async function select(
  admin: Admin,
  f: OutboxFilters,
  refuse: (e: OutboxEntry) => string | undefined,
): Promise<OutboxEntry[] | undefined> {
  if (!f.ids) return findEvents(admin.outbox, f);
  const found = await Promise.all(
    f.ids.map(async (id) => [id, await admin.outbox.get(id)] as const),
  );
  const problems = found.flatMap(([id, e]) => {
    const why = e === undefined ? 'does not exist' : refuse(e);
    return why === undefined ? [] : [`outbox event ${id} ${why}`];
  });
  if (problems.length > 0) {
    console.error(`${problems.join('\n')}\nnothing changed`);
    process.exitCode = EXIT_FAILED;
    return undefined;
  }
  return found
    .map(([, e]) => e!)
    .filter((e) => matches(e, f))
    .slice(0, f.limit);
}

/** `justonce outbox requeue | delete`. */
export function outboxActions(group: Command, globals: () => GlobalOptions): void {
  const action = (name: string, description: string, statuses: OutboxFilters['status'][]) =>
    outboxFilterOptions(
      group
        .command(name)
        .description(description)
        .argument('[ids...]', 'outbox event ids (or select with the filters)'),
      statuses,
    )
      .option('--all', 'every event of the status (when no id or filter is given)')
      .option('--limit <n>', 'act on at most this many events')
      .option('--dry-run', 'list what would change, and change nothing')
      .option('-y, --yes', 'do not ask before acting on more than one event')
      .option('--json', 'print JSON');

  action(
    'requeue',
    "put dead events back as pending, at the end of their key's queue, for the relay to publish again",
    ['dead'],
  ).action(async (ids: string[], flags: ActionFlags) => {
    checkGlobalOptions(globals());
    const filters = parseSelection(ids, flags);
    await withAdmin(globals(), async (admin) => {
      const events = await select(admin, filters, (e) =>
        e.status === 'dead' ? undefined : `is ${e.status}: only dead events are requeued`,
      );
      if (events === undefined) return;
      await runBulk(
        {
          verb: 'requeue',
          done: 'requeued',
          noun: 'outbox event',
          items: events,
          id: (e) => e.id,
          head: EVENT_HEAD,
          row: eventRow,
          act: async (e) => (await admin.outbox.requeue(e.id)) ?? false,
          result: 'new outbox event',
        },
        flags,
      );
    });
  });

  action(
    'delete',
    'delete dead (default) or pending events for good: the relay will never publish them',
    ['dead', 'pending', 'stuck'],
  ).action(async (ids: string[], flags: ActionFlags) => {
    checkGlobalOptions(globals());
    const filters = parseSelection(ids, flags);
    await withAdmin(globals(), async (admin) => {
      const events = await select(admin, filters, (e) =>
        e.status === 'published'
          ? 'is published: only dead and pending events are deleted (cleanup removes published ones)'
          : undefined,
      );
      if (events === undefined) return;
      await runBulk(
        {
          verb: 'delete',
          done: 'deleted',
          noun: 'outbox event',
          items: events,
          id: (e) => e.id,
          head: EVENT_HEAD,
          row: eventRow,
          act: (e) => admin.outbox.delete(e.id),
        },
        flags,
      );
    });
  });
}
