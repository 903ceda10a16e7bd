import type { Admin, DeadLetter } from '@justonce/core';
import type { Command } from 'commander';
import { parseName } from '../arguments';
import { runBulk, type BulkFlags } from '../bulk';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { EXIT_FAILED } from '../exit-codes';
import { UsageError } from '../usage-error';
import {
  findLetters,
  hasFilter,
  letterFilterOptions,
  matches,
  missingIds,
  parseLetterFilters,
  type LetterFilters,
  type LetterFlags,
} from './dead-letter-selection';

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
  if (!f.ids) return findLetters(admin.deadLetters, f);
  const found = (await Promise.all(f.ids.map((id) => admin.deadLetters.get(id)))).filter(
    (l): l is DeadLetter => l !== undefined,
  );
  const missing = missingIds(f.ids, found);
  if (missing.length > 0) {
    console.error(`no dead letter ${missing.join(', ')}; nothing changed`);
    process.exitCode = EXIT_FAILED;
    return undefined;
  }
  return found.filter((l) => matches(l, f)).slice(0, f.limit);
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

/** `justonce dead-letters requeue | delete`. */
export function deadLetterActions(group: Command, globals: () => GlobalOptions): void {
  const action = (name: string, description: string): Command =>
    letterFilterOptions(
      group
        .command(name)
        .description(description)
        .argument('[ids...]', 'dead letter ids (or select with the filters)'),
    )
      .option('--all', 'every waiting letter (when no id or filter is given)')
      .option('--limit <n>', 'act on at most this many letters')
      .option('--dry-run', 'list what would change, and change nothing')
      .option('-y, --yes', 'do not ask before acting on more than one letter')
      .option('--json', 'print JSON');

  action(
    'requeue',
    'publish dead letters again: each goes into the outbox in one transaction, the relay ' +
      'publishes it to where it came from (or --to), and the running consumer handles it once',
  )
    .option('--to <destination>', 'publish to this topic, queue or exchange instead')
    .action(async (ids: string[], flags: ActionFlags) => {
      checkGlobalOptions(globals());
      const filters = parseSelection(ids, flags);
      const to = parseName(flags.to, '--to');
      await withAdmin(globals(), async (admin) => {
        const letters = await select(admin, filters);
        if (letters === undefined) return;
        const nowhere = letters.filter((l) => to === undefined && l.delivery.source === undefined);
        if (nowhere.length > 0) {
          throw new UsageError(
            `dead letter ${nowhere.map((l) => l.id).join(', ')} has no source to publish to; pass --to <destination> (nothing changed)`,
          );
        }
        await runBulk(
          {
            verb: 'requeue',
            done: 'requeued',
            noun: 'dead letter',
            items: letters,
            id: (l) => l.id,
            head: [...HEAD, 'to'],
            row: (l) => [...row(l), to ?? l.delivery.source ?? '-'],
            act: (l) =>
              admin.redeliverDeadLetter(l.id, to === undefined ? {} : { destination: to }),
            result: 'outbox event',
          },
          flags,
        );
      });
    });

  action(
    'delete',
    'delete dead letters for good; their messages stay marked as handled, so redeliveries of ' +
      'them are acknowledged as duplicates',
  ).action(async (ids: string[], flags: ActionFlags) => {
    checkGlobalOptions(globals());
    const filters = parseSelection(ids, flags);
    await withAdmin(globals(), async (admin) => {
      const letters = await select(admin, filters);
      if (letters === undefined) return;
      await runBulk(
        {
          verb: 'delete',
          done: 'deleted',
          noun: 'dead letter',
          items: letters,
          id: (l) => l.id,
          head: HEAD,
          row,
          act: (l) => admin.deadLetters.delete(l.id),
        },
        flags,
      );
    });
  });
}
