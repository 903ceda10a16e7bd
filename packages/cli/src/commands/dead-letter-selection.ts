import type { DeadLetter, DeadLetterReason } from '@justonce/core';
import type { Command } from 'commander';
import { parseChoice, parseIds, parseInteger, parseName, parseTimeRange } from '../arguments';

/** Every {@link DeadLetterReason}, for `--reason`. */
export const REASONS: readonly DeadLetterReason[] = [
  'MISSING_MESSAGE_ID',
  'INVALID_MESSAGE_ID',
  'INVALID_SCOPE',
  'INVALID_HEADERS',
  'INVALID_BODY',
  'UNDECODABLE_BODY',
  'PAYLOAD_CONFLICT',
  'MAX_ATTEMPTS',
  'NON_RETRIABLE',
  'INVALID_PAYLOAD',
  'UNKNOWN_MESSAGE_TYPE',
  'RETRY_BUDGET_SPENT',
];

/** The options of the dead-letter commands that select letters, as commander gives them. */
export interface LetterFlags {
  readonly consumer?: string;
  readonly reason?: string;
  readonly since?: string;
  readonly until?: string;
  readonly ids?: string;
  readonly limit?: string;
  readonly requeued?: boolean;
}

/** Which letters, checked before the database is opened. */
export interface LetterFilters {
  readonly consumer?: string;
  readonly reason?: DeadLetterReason;
  readonly since?: Date;
  readonly until?: Date;
  readonly ids?: readonly string[];
  readonly limit: number;
  readonly includeRequeued: boolean;
}

/** Checks the selecting options (and positional ids); throws `UsageError`. */
export function parseLetterFilters(
  flags: LetterFlags,
  positional: readonly string[],
  defaultLimit: number,
): LetterFilters {
  const consumer = parseName(flags.consumer, '--consumer');
  const reason = parseChoice(flags.reason, '--reason', REASONS);
  const ids = parseIds(positional, flags.ids, 'dead letter');
  return {
    ...(consumer === undefined ? {} : { consumer }),
    ...(reason === undefined ? {} : { reason }),
    ...parseTimeRange(flags),
    ...(ids ? { ids } : {}),
    limit: parseInteger(flags.limit, '--limit', { min: 1, max: 1_000_000, fallback: defaultLimit }),
    includeRequeued: flags.requeued === true,
  };
}

/** Whether any filter narrows the selection (an action without one needs `--all`). */
export function hasFilter(f: LetterFilters): boolean {
  return (
    f.consumer !== undefined ||
    f.reason !== undefined ||
    f.since !== undefined ||
    f.until !== undefined ||
    f.ids !== undefined
  );
}

/** Whether `letter` passes the filters other than the ids. */
export function matches(letter: DeadLetter, f: LetterFilters): boolean {
  if (f.consumer !== undefined && letter.consumer !== f.consumer) return false;
  if (f.reason !== undefined && letter.reason !== f.reason) return false;
  if (f.since && letter.deadAt < f.since) return false;
  if (f.until && letter.deadAt >= f.until) return false;
  return f.includeRequeued || letter.requeuedAt === null;
}

/** The ids of `wanted` that are not in `found`. */
export function missingIds(wanted: readonly string[], found: readonly { id: string }[]): string[] {
  const have = new Set(found.map((r) => r.id));
  return wanted.filter((id) => !have.has(id));
}

/** The `dead-letters list` and actions' selecting options. */
export function letterFilterOptions(command: Command): Command {
  return command
    .option('--consumer <name>', 'only this consumer')
    .option('--reason <reason>', `only this reason (${REASONS.join(', ')})`)
    .option('--since <time>', 'dead-lettered at or after this ISO 8601 time')
    .option('--until <time>', 'dead-lettered before this ISO 8601 time')
    .option('--ids <ids>', 'only these ids, comma-separated')
    .option('--requeued', 'include letters already requeued');
}
