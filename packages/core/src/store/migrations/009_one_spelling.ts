import type { Migration } from '../migration';

/**
 * The status of an operation that failed and may be tried again is `FAILED_RETRIABLE`, the
 * spelling of `retriable` everywhere else in justonce (it was `FAILED_RETRYABLE`).
 */
export const m009OneSpelling: Migration = {
  version: 9,
  name: 'one_spelling',
  up: ({ table, name }) => [
    `alter table ${table('idempotency')} drop constraint ${name('idempotency_status_check')}`,
    `update ${table('idempotency')} set status = 'FAILED_RETRIABLE'
      where status = 'FAILED_RETRYABLE'`,
    `alter table ${table('idempotency')} add constraint ${name('idempotency_status_check')}
       check (status in ('IN_PROGRESS', 'SUCCEEDED', 'FAILED_RETRIABLE', 'FAILED_FINAL'))`,
  ],
};
