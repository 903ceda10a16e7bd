import type { ListOutboxOptions, SelectOutboxOptions } from '@justonce/core/admin';
import type { Command } from 'commander';
import { parseChoice, parseIds, parseInteger, parseName, parseTimeRange } from '../arguments';
import { parseDuration } from '../durations';
import { UsageError } from '../usage-error';

/** What `--status` selects. */
export type OutboxStatusFilter = NonNullable<ListOutboxOptions['status']>;
export const OUTBOX_STATUSES: readonly OutboxStatusFilter[] = ['dead', 'pending', 'stuck'];

/** The selecting options of the outbox commands, as commander gives them. */
export interface OutboxFlags {
  readonly status?: string;
  readonly stuckAfter?: string;
  readonly destination?: string;
  readonly since?: string;
  readonly until?: string;
  readonly ids?: string;
  readonly limit?: string;
}

/** Which events, checked before the database is opened. */
export interface OutboxFilters {
  readonly status: OutboxStatusFilter;
  readonly stuckAfterMs?: number;
  readonly destination?: string;
  readonly since?: Date;
  readonly until?: Date;
  readonly ids?: readonly string[];
  readonly limit: number;
  /** `--status` was given (a filter of its own for `delete`). */
  readonly statusGiven: boolean;
}

/** Adds the selecting options; `statuses` are those the command accepts. */
export function outboxFilterOptions(
  command: Command,
  statuses: readonly OutboxStatusFilter[],
): Command {
  if (statuses.length > 1) {
    command
      .option('--status <status>', `${statuses.join(' | ')} (default dead)`)
      .option(
        '--stuck-after <duration>',
        'with --status stuck: pending for longer than (default 1m)',
      );
  }
  return command
    .option('--destination <name>', 'only this topic, queue or exchange')
    .option('--since <time>', 'created at or after this ISO 8601 time')
    .option('--until <time>', 'created before this ISO 8601 time')
    .option('--ids <ids>', 'only these ids, comma-separated');
}

/** Checks the selecting options (and positional ids); throws `UsageError`. */
export function parseOutboxFilters(
  flags: OutboxFlags,
  positional: readonly string[],
  defaultLimit: number,
): OutboxFilters {
  const status = parseChoice(flags.status, '--status', OUTBOX_STATUSES);
  if (flags.stuckAfter !== undefined && status !== 'stuck') {
    throw new UsageError('--stuck-after goes with --status stuck');
  }
  const destination = parseName(flags.destination, '--destination');
  const ids = parseIds(positional, flags.ids, 'outbox event');
  return {
    status: status ?? 'dead',
    ...(flags.stuckAfter === undefined
      ? {}
      : { stuckAfterMs: parseDuration(flags.stuckAfter, '--stuck-after') }),
    ...(destination === undefined ? {} : { destination }),
    ...parseTimeRange(flags),
    ...(ids ? { ids } : {}),
    limit: parseInteger(flags.limit, '--limit', { min: 1, max: 1_000_000, fallback: defaultLimit }),
    statusGiven: status !== undefined,
  };
}

/** The options of `admin.outbox.select` for `f`: the events matching it, at most `f.limit`. */
export function outboxSelection({
  statusGiven: _given,
  ...selection
}: OutboxFilters): SelectOutboxOptions {
  return selection;
}
