import type { Migration } from '../migration';

/** Hex digests and fixed words: one byte per character keeps the composite keys short. */
const ASCII = 'character set ascii collate ascii_bin';

/**
 * Text compared as PostgreSQL compares `text`: byte for byte. MySQL's default collations ignore
 * case, and even `utf8mb4_bin` is a PAD SPACE collation, under which `a` and `a ` are equal, so
 * one key. This is each server's NO PAD binary collation, through executable comments:
 * `/*M!…*\/` runs on MariaDB only (10.6+: `utf8mb4_nopad_bin`), and MariaDB skips MySQL's 8.0
 * ones (`/*!80017…*\/`: `utf8mb4_0900_bin`, 8.0.17+). Two ids are two messages unless
 * byte-equal.
 *
 * The widths below keep every composite key under InnoDB's 3 072-byte index limit (4 bytes per
 * utf8mb4 character): consumer 200, scope 255, message id 255 characters — the inbox's and the
 * outbox's default limits, which on MySQL are also their maximum (see docs/store.md, "MySQL
 * and MariaDB").
 */
const EXACT_KEY =
  'character set utf8mb4 collate /*M!100600 utf8mb4_nopad_bin */ /*!80017 utf8mb4_0900_bin */';
const CONSUMER = `varchar(200) ${EXACT_KEY}`;
const SCOPE = `varchar(255) ${EXACT_KEY}`;
const MESSAGE_ID_KEY = `varchar(255) ${EXACT_KEY}`;
/** The database clock, in UTC to the microsecond (the session's time zone is UTC). */
const NOW = 'current_timestamp(6)';

/**
 * The whole schema of MySQL 8 and MariaDB 10.6+, as PostgreSQL's fourteen migrations leave it.
 * Partial indexes do not exist there: the relay's pending indexes lead with `status` instead,
 * and the dead letters' "one letter per message and payload" key holds only when `dedupe`,
 * through a generated column that is null otherwise (null never collides in a unique key).
 */
export const mysqlSchema: Migration = {
  version: 1,
  name: 'mysql_schema',
  up: ({ table, name }) => [
    `create table if not exists ${table('inbox_records')} (
       consumer ${CONSUMER} not null,
       scope ${SCOPE} not null,
       message_id ${MESSAGE_ID_KEY} not null,
       status varchar(16) ${ASCII} not null,
       fingerprint varchar(128) ${ASCII},
       attempts integer not null default 1,
       error json,
       created_at datetime(6) not null default ${NOW},
       expires_at datetime(6) not null,
       primary key (consumer, scope, message_id),
       key ${name('inbox_records_expires_at_idx')} (expires_at),
       key ${name('inbox_records_succeeded_created_idx')} (status, created_at, consumer),
       constraint ${name('inbox_records_status_check')}
         check (status in ('SUCCEEDED', 'FAILED_FINAL'))
     ) engine=InnoDB`,
    `create table if not exists ${table('inbox_attempts')} (
       scope ${SCOPE} not null,
       consumer ${CONSUMER} not null,
       message_id ${MESSAGE_ID_KEY} not null,
       attempts integer not null,
       first_attempt_at datetime(6) not null default ${NOW},
       last_attempt_at datetime(6) not null default ${NOW},
       last_error json,
       shared boolean not null default false,
       open_since datetime(6),
       open_pid bigint unsigned,
       overlapped boolean not null default false,
       primary key (scope, consumer, message_id),
       key ${name('inbox_attempts_last_attempt_at_idx')} (last_attempt_at)
     ) engine=InnoDB`,
    `create table if not exists ${table('inbox_offsets')} (
       consumer ${CONSUMER} not null,
       topic varchar(255) ${EXACT_KEY} not null,
       \`partition\` integer not null,
       high_offset bigint not null,
       updated_at datetime(6) not null default ${NOW},
       primary key (consumer, topic, \`partition\`)
     ) engine=InnoDB`,
    `create table if not exists ${table('consumer_activity')} (
       consumer ${CONSUMER} not null,
       minute datetime(6) not null,
       handled bigint not null default 0,
       duplicates bigint not null default 0,
       dead_lettered bigint not null default 0,
       primary key (consumer, minute),
       key ${name('consumer_activity_minute_idx')} (minute)
     ) engine=InnoDB`,
    `create table if not exists ${table('idempotency')} (
       -- UTF-8 bytes (utf8mb4_bin pads: \`k\` = \`k \`), 2 220 of InnoDB's 3 072 key bytes.
       scope varbinary(600) not null,
       operation varbinary(600) not null,
       \`key\` varbinary(1020) not null,
       request_hash varchar(128) ${ASCII},
       status varchar(24) ${ASCII} not null,
       owner_id varchar(64) ${ASCII},
       lease_until datetime(6),
       response longtext,
       error json,
       attempts integer not null default 1,
       created_at datetime(6) not null default ${NOW},
       updated_at datetime(6) not null default ${NOW},
       expires_at datetime(6),
       primary key (scope, operation, \`key\`),
       key ${name('idempotency_expires_at_idx')} (expires_at),
       key ${name('idempotency_in_progress_idx')} (status, operation, lease_until),
       key ${name('idempotency_succeeded_created_idx')} (status, created_at, operation),
       constraint ${name('idempotency_status_check')}
         check (status in ('IN_PROGRESS', 'SUCCEEDED', 'FAILED_RETRIABLE', 'FAILED_FINAL'))
     ) engine=InnoDB`,
    `create table if not exists ${table('dead_letters')} (
       id bigint not null auto_increment primary key,
       scope ${SCOPE} not null,
       consumer ${CONSUMER} not null,
       message_id ${MESSAGE_ID_KEY},
       dedupe boolean not null,
       fingerprint varchar(128) ${ASCII} not null,
       dedupe_fingerprint varchar(128) ${ASCII}
         as (case when dedupe then fingerprint end) stored,
       reason varchar(64) ${ASCII} not null,
       error_code longtext,
       error_message longtext,
       attempts integer not null,
       partition_key longtext,
       headers json not null,
       body longblob not null,
       body_is_text boolean not null,
       delivery json not null,
       first_attempt_at datetime(6),
       dead_at datetime(6) not null default ${NOW},
       requeued_at datetime(6),
       raw longtext,
       unique key ${name('dead_letters_message_uq')}
         (scope, consumer, message_id, dedupe_fingerprint),
       key ${name('dead_letters_consumer_idx')} (consumer, id),
       key ${name('dead_letters_dead_at_idx')} (dead_at),
       key ${name('dead_letters_waiting_idx')} (consumer, reason, requeued_at, dead_at)
     ) engine=InnoDB`,
    `create table if not exists ${table('outbox')} (
       id bigint not null auto_increment primary key,
       destination varchar(255) ${EXACT_KEY} not null,
       partition_key varchar(255) ${EXACT_KEY},
       message_id ${MESSAGE_ID_KEY} not null,
       headers json not null,
       payload longblob not null,
       created_at datetime(6) not null default ${NOW},
       available_at datetime(6) not null default ${NOW},
       attempts integer not null default 0,
       last_error text,
       status varchar(16) ${ASCII} not null default 'pending',
       published_at datetime(6),
       unique key ${name('outbox_message_id_key')} (message_id),
       key ${name('outbox_pending_idx')} (status, id),
       key ${name('outbox_pending_key_idx')} (status, partition_key, id),
       key ${name('outbox_published_idx')} (status, published_at),
       constraint ${name('outbox_status_check')}
         check (status in ('pending', 'published', 'dead'))
     ) engine=InnoDB`,
  ],
};

/** PostgreSQL's migration 15 (`consumer_resilience`, see there), on MySQL. */
export const mysqlConsumerResilience: Migration = {
  version: 2,
  name: 'consumer_resilience',
  up: ({ table }) => [
    `create table if not exists ${table('consumer_resilience')} (
       consumer ${CONSUMER} not null,
       breaker_key varchar(255) ${EXACT_KEY} not null,
       state varchar(16) ${ASCII},
       state_since datetime(6),
       budget_remaining integer,
       window_ms integer not null,
       first_deliveries bigint not null default 0,
       retries_paid bigint not null default 0,
       retries_shed bigint not null default 0,
       breaker_sheds bigint not null default 0,
       reported_at datetime(6) not null default ${NOW},
       primary key (consumer, breaker_key)
     ) engine=InnoDB`,
  ],
};

/** Every MySQL migration, in order; append only, as PostgreSQL's. */
export const mysqlMigrations: readonly Migration[] = [mysqlSchema, mysqlConsumerResilience];
