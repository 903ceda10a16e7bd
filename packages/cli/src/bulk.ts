import type { Admin } from '@justonce/core/admin';
import { SingleBar } from 'cli-progress';
import { confirm } from './confirm';
import { EXIT_FAILED } from './exit-codes';
import { printJson, table, say, complain } from './format';
import { UsageError } from './usage-error';

/** The options every bulk action takes. */
export interface BulkFlags {
  readonly dryRun?: boolean;
  readonly yes?: boolean;
  readonly json?: boolean;
}

/** Above this many items a progress bar is drawn (on a terminal). */
const PROGRESS_FROM = 20;

/** What a bulk action acts on: a row with an id (a dead letter, an outbox event). */
export interface BulkItem {
  readonly id: string;
}

/** One bulk action (requeue or delete) over rows already selected and checked. */
export interface BulkAction<T extends BulkItem> {
  /** `requeue`, `delete`: the verb in prompts and summaries. */
  readonly verb: string;
  /** `requeued`, `deleted`. */
  readonly done: string;
  /** `dead letter`, `outbox event`: singular; an `s` makes the plural. */
  readonly noun: string;
  readonly items: readonly T[];
  /** The table `--dry-run` prints: its head, and one row per item. */
  readonly head: readonly string[];
  readonly row: (item: T) => readonly (string | number)[];
  /**
   * Does it to the item of this id: resolves to what the summary shows for it (e.g. the new
   * outbox row id), or `true` or `undefined`; resolves to `false` or `null`, or throws a
   * refusal, when it could not be done (see `admin.bulk`).
   */
  readonly act: (id: string) => Promise<string | boolean | null | undefined>;
  /** What a result of `act` is, for the summary: `outbox event` prints `5 → outbox event 12`. */
  readonly result?: string;
}

/** `37 dead letters`, `1 dead letter`. */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * Does `action` with the terminal: lists the items with `--dry-run`; asks before more than
 * one item (or needs `--yes` off a terminal, else {@link UsageError}: nothing changed); draws
 * a progress bar on stderr for many items; prints what was done and what failed. Exit 1 when
 * any failed, or when the operator declined. A fault of the store stops it (see `admin.bulk`):
 * it says how far it got and rethrows.
 */
export async function actOnItems<T extends BulkItem>(
  admin: Admin,
  action: BulkAction<T>,
  flags: BulkFlags,
): Promise<void> {
  const { items, noun } = action;
  if (flags.dryRun) {
    if (flags.json) printJson({ dryRun: true, [action.verb]: items.map((item) => item.id) });
    else if (items.length === 0) say(`no ${noun}s match; nothing would change`);
    else {
      say(`would ${action.verb} ${count(items.length, noun)} (dry run, nothing changed):`);
      say(table(action.head, items.map(action.row)));
    }
    return;
  }
  if (items.length === 0) {
    if (flags.json) printJson({ [action.done]: [], failed: [] });
    else say(`no ${noun}s match; nothing changed`);
    return;
  }
  if (items.length > 1 && !flags.yes) {
    const question = `${action.verb} ${count(items.length, noun)}?`;
    const answer = await confirm(question);
    if (answer === undefined) {
      throw new UsageError(
        `${question.slice(0, -1)}: a bulk action needs --yes when not run on a terminal; nothing changed`,
      );
    }
    if (!answer) {
      complain('nothing changed');
      process.exitCode = EXIT_FAILED;
      return;
    }
  }
  const bar =
    items.length > PROGRESS_FROM && process.stderr.isTTY
      ? new SingleBar({
          stream: process.stderr,
          format: `${action.verb} [{bar}] {value}/{total}`,
          hideCursor: true,
          clearOnComplete: true,
        })
      : undefined;
  bar?.start(items.length, 0);
  // admin.bulk's rule: a refusal fails the item and the run goes on; a store fault stops it.
  let tried = 0;
  const onItem = (): void => {
    tried += 1;
    bar?.increment();
  };
  const outcome = await admin
    .bulk(
      items.map((item) => item.id),
      action.act,
      { onItem },
    )
    .catch((error: unknown) => {
      bar?.stop();
      complain(`stopped after ${count(tried, noun)} of ${items.length}; the rest were not tried`);
      throw error;
    });
  bar?.stop();
  const done = outcome.done.map(({ id, result }) =>
    typeof result === 'string' ? { id, result } : { id },
  );
  const failed = outcome.failed.map(({ id, error }) => ({
    id,
    error: error?.message ?? `no such ${noun} any more`,
  }));
  if (flags.json) printJson({ [action.done]: done, failed });
  else {
    say(`${action.done} ${count(done.length, noun)}`);
    if (action.result !== undefined && done.length <= PROGRESS_FROM) {
      for (const d of done) say(`  ${noun} ${d.id} → ${action.result} ${d.result ?? '-'}`);
    }
    for (const f of failed) complain(`could not ${action.verb} ${noun} ${f.id}: ${f.error}`);
  }
  if (failed.length > 0) process.exitCode = EXIT_FAILED;
}
