import type { Migration } from '../migration';

/**
 * The one dedup table for the inbox and idempotent operations. For the inbox, `operation`
 * is the consumer name, `key` the message id, and the row is written SUCCEEDED inside the
 * business transaction.
 */
export const m002Idempotency: Migration = {
  version: 2,
  name: 'idempotency',
  up: ({ table, name }) => [
    `create table ${table('idempotency')} (
       scope text not null,
       operation text not null,
       key text not null,
       request_hash text,
       status text not null
         constraint ${name('idempotency_status_check')}
         check (status in ('IN_PROGRESS', 'SUCCEEDED', 'FAILED_RETRYABLE', 'FAILED_FINAL')),
       owner_id text,
       lease_until timestamptz,
       response jsonb,
       error jsonb,
       attempts integer not null default 1,
       created_at timestamptz not null default now(),
       updated_at timestamptz not null default now(),
       expires_at timestamptz,
       constraint ${name('idempotency_pkey')} primary key (scope, operation, key)
     )`,
    `create index ${name('idempotency_expires_at_idx')}
       on ${table('idempotency')} (expires_at) where expires_at is not null`,
  ],
};
