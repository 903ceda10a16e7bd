import type { Knex } from 'knex';
import { optionKeys, optionalBoolean, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { parseResponse, RECORD_COLUMNS, type IdempotencyRow } from '../operations/sql/row';
import { rowsOf } from '../store/migrate';
import type { Store } from '../store/store';
import type {
  AdminOperations,
  ListOperationsOptions,
  OperationRecord,
  OperationRef,
} from './types';
import { choiceOption, limitOption, stringOption, textOption } from '../config/arguments';
import { isMysql } from '../store/dialect';
import {
  MYSQL_PAST_LEASE,
  mysqlGetOperation,
  mysqlListOperations,
  mysqlReleaseOperation,
} from './sql/mysql/operations';

const LIST_KEYS = optionKeys<ListOperationsOptions>()(['state', 'operation', 'scope', 'limit']);
const REF_KEYS = optionKeys<OperationRef>()(['operation', 'key', 'scope']);
const RELEASE_KEYS = ['force'] as const;

/** The error a released record carries, in the shape operations store failures in. */
const RELEASED_ERROR = JSON.stringify({
  name: 'ReleasedError',
  code: 'RELEASED',
  message: 'released by an operator: the record was in progress and its owner was given up on',
});

type Row = IdempotencyRow & { past_lease: boolean };

function toRecord(row: Row): OperationRecord {
  const date = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
  return {
    scope: row.scope,
    operation: row.operation,
    key: row.key,
    status: row.status,
    requestHash: row.request_hash,
    ownerId: row.owner_id,
    leaseUntil: row.lease_until === null ? null : date(row.lease_until),
    pastLease: row.past_lease === true,
    attempts: Number(row.attempts),
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
    expiresAt: row.expires_at === null ? null : date(row.expires_at),
    response: parseResponse(row.response),
    error: row.error ?? null,
  };
}

/** A validated {@link OperationRef}: scope, operation and key as bindings. */
function refOf(ref: unknown): [string, string, string] {
  if (typeof ref !== 'object' || ref === null) {
    throw new ConfigurationError('an operation record is named by { operation, key, scope? }', {
      given: ref === null ? 'null' : typeof ref,
    });
  }
  rejectUnknownOptions(ref, REF_KEYS, 'operations');
  const r = ref as OperationRef;
  const operation = stringOption(r.operation, 'operation');
  if (operation === undefined) throw new ConfigurationError('operation is required');
  if (typeof r.key !== 'string') {
    throw new ConfigurationError('key must be a string', { key: typeof r.key });
  }
  return [stringOption(r.scope, 'scope') ?? 'default', operation, textOption(r.key, 'key')];
}

const SELECT = `select ${RECORD_COLUMNS},
  coalesce(status = 'IN_PROGRESS' and lease_until <= now(), false) as past_lease`;

/**
 * An inbox record (`inbox_records`) in the shape of an operation's: the consumer as the
 * operation, the message id as the key, the fingerprint as the request hash. Inbox records
 * have no owner, lease or response, and are never updated; one that never expires (moved
 * by migration 12 without an expiry) has `expires_at` null, as it had before.
 */
const SELECT_INBOX = `select scope, consumer as operation, message_id as key,
  fingerprint as request_hash, status, null::text as owner_id, null::timestamptz as lease_until,
  null::text as response, error, attempts, created_at, created_at as updated_at,
  nullif(expires_at, 'infinity'::timestamptz) as expires_at, false as past_lease`;

/** `operations.list`'s statement over the conditions built from its options. */
async function listRows(
  store: Store,
  where: readonly string[],
  bindings: readonly Knex.RawBinding[],
  limit: number,
): Promise<Row[]> {
  const table = store.names.table('idempotency');
  if (isMysql(store)) return mysqlListOperations(store.knex, table, where, bindings, limit);
  const result = await store.knex.raw(
    `${SELECT} from ${table} where ${where.join(' and ')}
          order by lease_until, operation, scope, key limit ?`,
    [...bindings, limit],
  );
  return rowsOf<Row>(result);
}

/** `operations.get`'s statement: the operation's record, else the inbox consumer's. */
async function getRow(
  store: Store,
  [scope, operation, key]: [string, string, string],
): Promise<Row | undefined> {
  const table = store.names.table('idempotency');
  const inboxTable = store.names.table('inbox_records');
  if (isMysql(store)) {
    return mysqlGetOperation(store.knex, table, inboxTable, [scope, operation, key]);
  }
  // The operation's record first, then the inbox consumer's of that name: one statement,
  // each branch a primary-key lookup.
  const result = await store.knex.raw(
    `(${SELECT} from ${table} where scope = ? and operation = ? and key = ?)
         union all
         (${SELECT_INBOX} from ${inboxTable}
           where consumer = ? and scope = ? and message_id = ?)
         limit 1`,
    [scope, operation, key, operation, scope, key],
  );
  return rowsOf<Row>(result)[0];
}

/**
 * `operations.release`'s statement. Clearing owner_id fences the old owner off: its
 * completion is a compare-and-set on it and now fails with LeaseLostError. The request hash
 * stays, so the reserve that takes a FAILED_RETRIABLE record over still refuses a different
 * request.
 */
async function releaseRow(
  store: Store,
  key: [string, string, string],
  force: boolean,
): Promise<boolean> {
  const table = store.names.table('idempotency');
  if (isMysql(store)) return mysqlReleaseOperation(store.knex, table, RELEASED_ERROR, key, force);
  const result = await store.knex.raw(
    `update ${table}
            set status = 'FAILED_RETRIABLE', owner_id = null, lease_until = null,
                error = ?::jsonb, updated_at = now()
          where scope = ? and operation = ? and key = ? and status = 'IN_PROGRESS'
            ${force ? '' : 'and lease_until <= now()'}
          returning key`,
    [RELEASED_ERROR, ...key],
  );
  return rowsOf(result).length > 0;
}

/** Operations and inbox records, for operators ({@link AdminOperations}). @internal */
export function adminOperations(store: Store): AdminOperations {
  return {
    async list(options: ListOperationsOptions = {}): Promise<OperationRecord[]> {
      rejectUnknownOptions(options, LIST_KEYS, 'operations.list');
      const state = choiceOption(
        options.state,
        'state',
        ['in-progress', 'past-lease'],
        'in-progress',
      );
      const limit = limitOption(options.limit);
      // `status = 'IN_PROGRESS'` matches idempotency_in_progress_idx (migration 010).
      const where = [`status = 'IN_PROGRESS'`];
      const bindings: Knex.RawBinding[] = [];
      if (state === 'past-lease') {
        where.push(isMysql(store) ? MYSQL_PAST_LEASE : 'lease_until <= now()');
      }
      const operation = stringOption(options.operation, 'operation');
      if (operation !== undefined) {
        where.push('operation = ?');
        bindings.push(operation);
      }
      const scope = stringOption(options.scope, 'scope');
      if (scope !== undefined) {
        where.push('scope = ?');
        bindings.push(scope);
      }
      return (await listRows(store, where, bindings, limit)).map(toRecord);
    },

    async get(ref: OperationRef): Promise<OperationRecord | undefined> {
      const row = await getRow(store, refOf(ref));
      return row === undefined ? undefined : toRecord(row);
    },

    async release(ref: OperationRef, options: { force?: boolean } = {}): Promise<boolean> {
      const key = refOf(ref);
      rejectUnknownOptions(options, RELEASE_KEYS, 'operations.release');
      const force = optionalBoolean(options.force, 'force', false);
      return releaseRow(store, key, force);
    },
  };
}
