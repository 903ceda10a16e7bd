import type { Admin, OutboxEntry } from '@justonce/core/admin';
import type { Command } from 'commander';
import type { BulkFlags } from '../bulk';
import { bulkCommand } from '../bulk-command';
import type { GlobalOptions } from '../connect';
import { EXIT_FAILED } from '../exit-codes';
import { UsageError } from '../usage-error';
import { EVENT_HEAD, eventRow } from './outbox-rows';
import {
  outboxFilterOptions,
  outboxSelection,
  parseOutboxFilters,
  type OutboxFilters,
  type OutboxFlags,
  type OutboxStatusFilter,
} from './outbox-selection';
import { complain } from '../format';

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
      'say which events: ids, --ids, --status, --destination, --since or --until (or --all for every dead event)',
    );
  }
  return f;
}

/**
 * Whether `e` has the status `--status` asked for; `stuck` as `admin.outbox.list` reads it
 * (pending, with failed attempts or older than `--stuck-after`).
 */
function hasStatus(e: OutboxEntry, f: OutboxFilters): boolean {
  if (f.status === 'dead') return e.status === 'dead';
  if (e.status !== 'pending') return false;
  if (f.status === 'pending') return true;
  return e.attempts > 0 || e.createdAt.getTime() < Date.now() - (f.stuckAfterMs ?? 60_000);
}

/** Whether an event named by id passes the filters (`--status` only when given). */
function matches(e: OutboxEntry, f: OutboxFilters): boolean {
  if (f.statusGiven && !hasStatus(e, f)) return false;
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
  if (!f.ids) return admin.outbox.select(outboxSelection(f)).toArray();
  const found = await Promise.all(
    f.ids.map(async (id) => [id, await admin.outbox.get(id)] as const),
  );
  const problems = found.flatMap(([id, e]) => {
    const why = e === undefined ? 'does not exist' : refuse(e);
    return why === undefined ? [] : [`outbox event ${id} ${why}`];
  });
  if (problems.length > 0) {
    complain(`${problems.join('\n')}\nnothing changed`);
    process.exitCode = EXIT_FAILED;
    return undefined;
  }
  return found
    .map(([, e]) => e!)
    .filter((e) => matches(e, f))
    .slice(0, f.limit);
}

/**
 * What `requeue` and `delete` share: what they act on, how they select and show it. Each says
 * which statuses it takes, and why it refuses an event named by id.
 */
function events(
  statuses: readonly OutboxStatusFilter[],
  refuse: (e: OutboxEntry) => string | undefined,
) {
  return {
    noun: 'outbox event',
    unit: 'event',
    all: 'every event of the status',
    filters: (command: Command) => outboxFilterOptions(command, statuses),
    parse: (ids: readonly string[], flags: ActionFlags) => parseSelection(ids, flags),
    select: (admin: Admin, filters: OutboxFilters) => select(admin, filters, refuse),
    head: EVENT_HEAD,
    row: eventRow,
  };
}

/** `justonce outbox requeue | delete`. */
export function outboxActions(group: Command, globals: () => GlobalOptions): void {
  bulkCommand(group, globals, {
    ...events(['dead'], (e) =>
      e.status === 'dead' ? undefined : `is ${e.status}: only dead events are requeued`,
    ),
    name: 'requeue',
    description:
      "put dead events back as pending, at the end of their key's queue, for the relay to publish again",
    act: (admin, id) => admin.outbox.requeue(id),
    result: 'new outbox event',
  });

  bulkCommand(group, globals, {
    ...events(['dead', 'pending', 'stuck'], (e) =>
      e.status === 'published'
        ? 'is published: only dead and pending events are deleted (cleanup removes published ones)'
        : undefined,
    ),
    name: 'delete',
    description:
      'delete dead (default) or pending events for good: the relay will never publish them',
    act: (admin, id) => admin.outbox.delete(id),
  });
}
