import type { Migration } from '../migration';

/**
 * The inbox's own tables.
 *
 * - `inbox_attempts` counts deliveries of a message outside the business transaction, so a
 *   message that kills the process every time is still seen to have been tried. A row lives
 *   only while a message is failing: the transaction that finishes the message deletes it.
 * - `dead_letters` keeps what could not be handled, with body, headers and delivery facts,
 *   until someone requeues or deletes it. A letter with `dedupe` set is unique per
 *   `(scope, consumer, message_id, fingerprint)`, so dead-lettering the same message twice
 *   (after a crash, or from two racing deliveries) leaves one row; letters without a usable
 *   message id get a fresh row each.
 */
export const m003Inbox: Migration = {
  version: 3,
  name: 'inbox',
  up: ({ table, name }) => [
    `create table ${table('inbox_attempts')} (
       scope text not null,
       consumer text not null,
       message_id text not null,
       attempts integer not null,
       first_attempt_at timestamptz not null default now(),
       last_attempt_at timestamptz not null default now(),
       last_error jsonb,
       constraint ${name('inbox_attempts_pkey')} primary key (scope, consumer, message_id)
     )`,
    `create table ${table('dead_letters')} (
       id bigint generated always as identity
         constraint ${name('dead_letters_pkey')} primary key,
       scope text not null,
       consumer text not null,
       message_id text,
       dedupe boolean not null,
       fingerprint text not null,
       reason text not null,
       error_code text,
       error_message text,
       attempts integer not null,
       partition_key text,
       headers jsonb not null,
       body bytea not null,
       body_is_text boolean not null,
       delivery jsonb not null,
       first_attempt_at timestamptz,
       dead_at timestamptz not null default now(),
       requeued_at timestamptz
     )`,
    `create unique index ${name('dead_letters_message_uq')}
       on ${table('dead_letters')} (scope, consumer, message_id, fingerprint) where dedupe`,
    `create index ${name('dead_letters_consumer_idx')}
       on ${table('dead_letters')} (consumer, id)`,
  ],
};
