import type { DeadLetter } from '@justonce/core';
import type { Admin } from '@justonce/core/admin';
import type { Command } from 'commander';
import { crashPoint } from '@justonce/core/transport';
import { parseName } from '../arguments';
import type { BulkFlags } from '../bulk';
import { bulkCommand } from '../bulk-command';
import type { GlobalOptions } from '../connect';
import { EXIT_FAILED, EXIT_USAGE } from '../exit-codes';
import { UsageError } from '../usage-error';
import {
  hasFilter,
  letterFilterOptions,
  matches,
  missingIds,
  parseLetterFilters,
  type LetterFilters,
  type LetterFlags,
} from './dead-letter-selection';
import { complain } from '../format';

type ActionFlags = LetterFlags & BulkFlags & { all?: boolean; to?: string };

/** Everything a bulk action may select, at most this many per run. */
const MAX_ITEMS = 1_000_000;

/**
 * Checks an action's selection before anything is read: ids or a filter, or `--all`. Letters
 * named by id are taken whether requeued or not (the operator named them).
 */
function parseSelection(ids: readonly string[], flags: ActionFlags): LetterFilters {
  const filters = parseLetterFilters(flags, ids, MAX_ITEMS);
  if (!hasFilter(filters) && !flags.all) {
    throw new UsageError(
      'say which letters: ids, --ids, --consumer, --reason, --since or --until (or --all for every waiting letter)',
    );
  }
  return filters.ids ? { ...filters, includeRequeued: true } : filters;
}

/**
 * The letters to act on. Named ids that do not exist end the command before anything
 * changes (exit 1); `undefined` then.
 */
async function select(admin: Admin, f: LetterFilters): Promise<DeadLetter[] | undefined> {
  if (!f.ids) return admin.deadLetters.select(f).toArray();
  const found = (await Promise.all(f.ids.map((id) => admin.deadLetters.get(id)))).filter(
    (l): l is DeadLetter => l !== undefined,
  );
  const missing = missingIds(f.ids, found);
  if (missing.length > 0) {
    complain(`no dead letter ${missing.join(', ')}; nothing changed`);
    process.exitCode = EXIT_FAILED;
    return undefined;
  }
  return found.filter((l) => matches(l, f)).slice(0, f.limit);
}

/** What `requeue` was asked: which letters, where to, and whether only to show it. */
interface RequeueSelection {
  readonly filters: LetterFilters;
  readonly to: string | undefined;
  readonly dryRun: boolean;
}

/**
 * The letters of `letters` that can be requeued, checked before anything changes.
 *
 * - A letter without a message id cannot be redelivered (the consumer could not tell its
 *   copy from a new message). Named by id, it ends the command (exit 1); selected by a
 *   filter, it is skipped with a note on stderr.
 * - A letter with no recorded source needs `--to`. Without it the command refuses (exit 2);
 *   a dry run lists every letter first, marking those.
 */
function requeueable(
  letters: readonly DeadLetter[],
  { filters, to, dryRun }: RequeueSelection,
): DeadLetter[] | undefined {
  const anonymous = letters.filter((l) => l.messageId === null).map((l) => l.id);
  if (anonymous.length > 0 && filters.ids) {
    complain(
      `dead letter ${anonymous.join(', ')} cannot be requeued: it has no message id (delete it instead); nothing changed`,
    );
    process.exitCode = EXIT_FAILED;
    return undefined;
  }
  if (anonymous.length > 0) {
    complain(
      `skipping dead letter ${anonymous.join(', ')}: no message id, so it cannot be requeued (delete it instead)`,
    );
  }
  const chosen = letters.filter((l) => l.messageId !== null);
  const nowhere = chosen.filter((l) => to === undefined && l.delivery.source === undefined);
  if (nowhere.length === 0) return chosen;
  const message = `dead letter ${nowhere.map((l) => l.id).join(', ')} has no source to publish to; pass --to <destination>`;
  if (!dryRun) throw new UsageError(`${message} (nothing changed)`);
  complain(message);
  process.exitCode = EXIT_USAGE;
  return chosen;
}

const HEAD = ['id', 'consumer', 'reason', 'message id', 'source', 'dead at'];
const row = (l: DeadLetter) => [
  l.id,
  l.consumer,
  l.reason,
  l.messageId ?? '(none)',
  l.delivery.source ?? '(unknown)',
  l.deadAt.toISOString(),
];

/** What `requeue` and `delete` share: what they act on, how they select and show it. */
const LETTERS = {
  noun: 'dead letter',
  unit: 'letter',
  all: 'every waiting letter',
  filters: letterFilterOptions,
  head: HEAD,
  row,
} as const;

/** `justonce dead-letters requeue | delete`. */
export function deadLetterActions(group: Command, globals: () => GlobalOptions): void {
  bulkCommand(group, globals, {
    ...LETTERS,
    name: 'requeue',
    description:
      'publish dead letters again: each goes into the outbox in one transaction, the relay ' +
      'publishes it to where it came from (or --to), and the running consumer handles it once',
    parse: (ids, flags: ActionFlags) => ({
      filters: parseSelection(ids, flags),
      to: parseName(flags.to, '--to'),
      dryRun: flags.dryRun === true,
    }),
    select: async (admin, selection) => {
      const letters = await select(admin, selection.filters);
      return letters === undefined ? undefined : requeueable(letters, selection);
    },
    head: [...HEAD, 'to'],
    row: (l, { to }) => [...row(l), to ?? l.delivery.source ?? '(needs --to)'],
    act: async (admin, id, { to }) => {
      const requeued = await admin.redeliverDeadLetter(
        id,
        to === undefined ? {} : { destination: to },
      );
      crashPoint('cli.requeue');
      return requeued;
    },
    result: 'outbox event',
  }).option('--to <destination>', 'publish to this topic, queue or exchange instead');

  bulkCommand(group, globals, {
    ...LETTERS,
    name: 'delete',
    description:
      'delete dead letters for good; their messages stay marked as handled, so redeliveries of ' +
      'them are acknowledged as duplicates',
    parse: (ids, flags: ActionFlags) => parseSelection(ids, flags),
    select,
    act: (admin, id) => admin.deadLetters.delete(id),
  });
}
