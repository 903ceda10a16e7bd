import type { Migration } from '../migration';

/**
 * `inbox_attempts.open_since`, `open_pid` and `overlapped`: copies of one message delivered
 * at the same moment each count an attempt before any of them reaches the dedup record.
 * `open_since` is when the latest attempt that went ahead was counted (a copy refused as
 * concurrent leaves it as it was; cleared when an attempt reports a failure) and `open_pid` the
 * database session that counted it; `overlapped` says the latest count came a
 * moment after another attempt that had not finished and whose session is still alive (a
 * process that crashed took its sessions with it). A copy that finds the count past
 * `maxAttempts` that way is retried later rather than dead-lettered.
 */
export const m008OpenAttempts: Migration = {
  version: 8,
  name: 'open_attempts',
  up: ({ table }) => [
    `alter table ${table('inbox_attempts')}
       add column open_since timestamptz,
       add column open_pid integer,
       add column overlapped boolean not null default false`,
  ],
};
