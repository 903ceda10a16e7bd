import type { Admin } from '@justonce/core/admin';
import type { Command } from 'commander';
import { actOnItems, type BulkAction, type BulkFlags, type BulkItem } from './bulk';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from './connect';

/**
 * One bulk subcommand of a group (`dead-letters requeue`, `outbox delete`): its selection,
 * checked before connecting, then read; how it shows (`--dry-run`) and does its work on each
 * item selected.
 */
export interface BulkCommand<T extends BulkItem, S, F extends BulkFlags> {
  /** `requeue`, `delete`: the subcommand's name and the verb in prompts and summaries. */
  readonly name: string;
  readonly description: string;
  /** `dead letter`, `outbox event`: what an id names. */
  readonly noun: string;
  /** `letter`, `event`: the short noun of the option help. */
  readonly unit: string;
  /** What `--all` selects, for its help: `every waiting letter`. */
  readonly all: string;
  /** Adds the filter options to the subcommand. */
  readonly filters: (command: Command) => Command;
  /** Checks the ids and flags before connecting: throws a UsageError when they are off. */
  readonly parse: (ids: readonly string[], flags: F) => S;
  /** The items to act on; `undefined` when it ended the command itself (nothing changed). */
  readonly select: (admin: Admin, selection: S) => Promise<readonly T[] | undefined>;
  /** The `--dry-run` table: its head, and one row per item. */
  readonly head: readonly string[];
  readonly row: (item: T, selection: S) => readonly (string | number)[];
  /** Does it to the item of an id, as {@link BulkAction.act}. */
  readonly act: (admin: Admin, id: string, selection: S) => ReturnType<BulkAction<T>['act']>;
  /** What a result of `act` is, as {@link BulkAction.result}. */
  readonly result?: string;
}

/**
 * Adds `spec` to `group` with the options every bulk action takes (`--all`, `--limit`,
 * `--dry-run`, `--yes`, `--json`), run by {@link actOnItems}. Returns the subcommand, for options
 * of its own.
 */
export function bulkCommand<T extends BulkItem, S, F extends BulkFlags>(
  group: Command,
  globals: () => GlobalOptions,
  spec: BulkCommand<T, S, F>,
): Command {
  const command = group
    .command(spec.name)
    .description(spec.description)
    .argument('[ids...]', `${spec.noun} ids (or select with the filters)`);
  return spec
    .filters(command)
    .option('--all', `${spec.all} (when no id or filter is given)`)
    .option('--limit <n>', `act on at most this many ${spec.unit}s`)
    .option('--dry-run', 'list what would change, and change nothing')
    .option('-y, --yes', `do not ask before acting on more than one ${spec.unit}`)
    .option('--json', 'print JSON')
    .action(async (ids: string[], flags: F) => {
      checkGlobalOptions(globals());
      const selection = spec.parse(ids, flags);
      await withAdmin(globals(), async (admin) => {
        const items = await spec.select(admin, selection);
        if (items === undefined) return;
        const action: BulkAction<T> = {
          verb: spec.name,
          done: `${spec.name}d`, // requeued, deleted
          noun: spec.noun,
          items,
          head: spec.head,
          row: (item) => spec.row(item, selection),
          act: (id) => spec.act(admin, id, selection),
          ...(spec.result === undefined ? {} : { result: spec.result }),
        };
        await actOnItems(admin, action, flags);
      });
    });
}
