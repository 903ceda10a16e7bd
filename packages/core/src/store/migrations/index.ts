import type { Migration } from '../migration';
import { m001Init } from './001_init';
import { m002Idempotency } from './002_idempotency';
import { m003Inbox } from './003_inbox';
import { m004Outbox } from './004_outbox';
import { m005Operations } from './005_operations';
import { m006ExactText } from './006_exact_text';
import { m007SharedAttempts } from './007_shared_attempts';
import { m008OpenAttempts } from './008_open_attempts';
import { m009OneSpelling } from './009_one_spelling';
import { m010OperatorIndexes } from './010_operator_indexes';
import { m011ConsumerActivity } from './011_consumer_activity';
import { m012InboxRecords } from './012_inbox_records';
import { m013InboxOffsets } from './013_inbox_offsets';
import { m014ActivityMinute } from './014_activity_minute';
import { m015ConsumerResilience } from './015_consumer_resilience';

/**
 * Every migration, in order. Append only: a released migration is never edited, and a new
 * one takes the next number.
 */
export const migrations: readonly Migration[] = [
  m001Init,
  m002Idempotency,
  m003Inbox,
  m004Outbox,
  m005Operations,
  m006ExactText,
  m007SharedAttempts,
  m008OpenAttempts,
  m009OneSpelling,
  m010OperatorIndexes,
  m011ConsumerActivity,
  m012InboxRecords,
  m013InboxOffsets,
  m014ActivityMinute,
  m015ConsumerResilience,
];
