import { randomUUID } from 'node:crypto';
import type { Store } from '../store/store';
import { ConfigurationError } from '../errors';
import { silentLogger } from '../observability/logger';
import { resolveMeter } from '../observability/metrics';
import { LeaseLostError, isLeaseLostError } from './errors/lease-lost-error';
import { OperationConflictError } from './errors/operation-conflict-error';
import { OperationFailedError } from './errors/operation-failed-error';
import { OperationInProgressError } from './errors/operation-in-progress-error';
import { ResponseTooLargeError } from './errors/response-too-large-error';
import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import { callOptions, refInput } from './input';
import { requestHash } from './request-hash';
import { extendLeaseRow } from './sql/extend-lease';
import { finalizeRow, type Final } from './sql/finalize';
import { readRow } from './sql/read';
import { reserveRow } from './sql/reserve';
import { parseResponse, toRecord, toStoredError, type RecordKey } from './sql/row';
import type {
  OperationContext,
  OperationEffect,
  OperationRecord,
  OperationRef,
  Operations,
  OperationsOptions,
  OperationTarget,
  Reservation,
  ReserveOptions,
  RunOptions,
  StoredOperationError,
} from './types';
import { durationOption, optionalFunction, positiveIntegerOption } from '../config/options';
import {
  MAX_NAME_LENGTH,
  durationInput,
  nameInput,
  nameOption,
  rejectUnknownOperationsOptions,
} from './validate';
import { systemClock } from '../retry/clock';
import { storableDiagnostic } from '../store/text';

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_POLL_INTERVAL_MS = 50;
const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
const DEFAULT_MAX_KEY_LENGTH = 255;
/** Longest error message kept in a record. */
const MAX_STORED_MESSAGE = 1000;
/** Longest error name or code kept in a record. */
const MAX_STORED_NAME = 200;
/**
 * How many times one reservation re-runs its upsert when the row changed between the upsert
 * and the read that explains it (finalized, expired or deleted in between).
 */
const MAX_RESERVE_ROUNDS = 5;

/** Outcomes counted by the `justonce.operations.outcomes` counter. */
type Outcome =
  | 'executed'
  | 'replayed'
  | 'failure_replayed'
  | 'effect_failed'
  | 'conflict'
  | 'in_progress'
  | 'lease_lost';

/**
 * Idempotent operations with effects outside the database (DESIGN guarantee 3). Each
 * `(scope, operation, key)` has one record in the `idempotency` table; `run` reserves it
 * atomically with a fresh owner id and a lease, runs the effect, and finalizes by
 * compare-and-set on the owner, so a stale worker that lost its lease cannot overwrite the
 * outcome. Later duplicates get the stored response, the stored final failure, or an
 * in-progress answer (optionally after waiting). Leases and expiry use the database clock.
 *
 * ```ts
 * const charges = createOperations({ store, operation: 'charge-card' });
 * const receipt = await charges.run(orderId, { amount, currency }, async (ctx) => {
 *   const charge = await psp.charge({ amount, currency }, { idempotencyKey: ctx.key });
 *   return { chargeId: charge.id };
 * });
 * ```
 */
export function createOperations(options: OperationsOptions): Operations {
  if (options === null || typeof options !== 'object') {
    throw new ConfigurationError('createOperations needs an options object');
  }
  rejectUnknownOperationsOptions(options);
  const store: Store = options.store;
  if (store === undefined || store === null || typeof store.knex !== 'function') {
    throw new ConfigurationError('createOperations needs a store (see createStore)');
  }
  const defaultOperation =
    options.operation === undefined ? undefined : nameOption(options.operation, 'operation');
  const defaultScope = options.scope === undefined ? 'default' : nameOption(options.scope, 'scope');
  const leaseMs = durationOption(options.leaseMs, 'leaseMs', DEFAULT_LEASE_MS, 1);
  const defaultWaitMs = durationOption(options.waitForInProgressMs, 'waitForInProgressMs', 0, 0);
  const pollIntervalMs = durationOption(
    options.pollIntervalMs,
    'pollIntervalMs',
    DEFAULT_POLL_INTERVAL_MS,
    1,
  );
  const defaultRetentionMs = durationOption(
    options.retentionMs,
    'retentionMs',
    DEFAULT_RETENTION_MS,
    1,
  );
  const maxResponseBytes = positiveIntegerOption(
    options.maxResponseBytes,
    'maxResponseBytes',
    DEFAULT_MAX_RESPONSE_BYTES,
  );
  const maxKeyLength = positiveIntegerOption(
    options.maxKeyLength,
    'maxKeyLength',
    DEFAULT_MAX_KEY_LENGTH,
  );
  const isRetryable =
    optionalFunction<NonNullable<typeof options.isRetryable>>(options.isRetryable, 'isRetryable') ??
    defaultIsRetryable;
  const logger = options.logger ?? silentLogger;
  const meter = resolveMeter(options.meter);
  const outcomes = meter.createCounter('justonce.operations.outcomes', {
    description: 'Calls of idempotent operations, by outcome',
  });
  const effectDuration = meter.createHistogram('justonce.operations.effect.duration', {
    description: 'Time the effect of an idempotent operation took',
    unit: 'ms',
  });
  const { knex, names } = store;

  const count = (operation: string, outcome: Outcome): void =>
    outcomes.add(1, { operation, outcome });

  function target(key: unknown, given: OperationTarget | undefined): RecordKey {
    const operation = given?.operation ?? defaultOperation;
    if (operation === undefined) {
      throw new InvalidOperationInputError(
        'no operation name: pass one to createOperations or to this call',
      );
    }
    return {
      scope: nameInput(given?.scope ?? defaultScope, 'scope', MAX_NAME_LENGTH),
      operation: nameInput(operation, 'operation', MAX_NAME_LENGTH),
      key: nameInput(key, 'key', maxKeyLength),
    };
  }

  async function reserveRecord(
    record: RecordKey,
    hash: string,
    retentionMs: number,
  ): Promise<Reservation> {
    let last: { ownerId: string | undefined; leaseUntil: Date | undefined; attempts: number } = {
      ownerId: undefined,
      leaseUntil: undefined,
      attempts: 0,
    };
    for (let round = 0; round < MAX_RESERVE_ROUNDS; round += 1) {
      const ownerId = randomUUID();
      const reserved = await reserveRow(knex, names, record, {
        requestHash: hash,
        ownerId,
        leaseMs,
        retentionMs,
      });
      if (reserved !== undefined) {
        if (reserved.attempts > 1) {
          logger.info('operation re-reserved after a retryable failure or an expired lease', {
            ...record,
            ownerId,
            attempt: reserved.attempts,
          });
        }
        return {
          kind: 'acquired',
          ref: { ...record, ownerId, attempt: reserved.attempts, retentionMs },
          leaseUntil: reserved.leaseUntil,
          leaseRemainingMs: reserved.leaseUntil.getTime() - reserved.dbNow.getTime(),
        };
      }
      const current = await readRow(knex, names, record);
      // Gone or expired since the upsert looked: try again, it is absent now.
      if (current === undefined || current.expired) continue;
      const { row } = current;
      if (row.request_hash !== hash) {
        count(record.operation, 'conflict');
        logger.warn('idempotency key reused with a different request', { ...record });
        throw new OperationConflictError(record.scope, record.operation, record.key);
      }
      const attempts = Number(row.attempts);
      if (row.status === 'SUCCEEDED') {
        return { kind: 'completed', response: parseResponse(row.response), attempts };
      }
      if (row.status === 'FAILED_FINAL') {
        return {
          kind: 'failed',
          failure: toStoredError(row.error) ?? { name: 'Error', message: 'unknown failure' },
          attempts,
        };
      }
      if (row.status === 'IN_PROGRESS' && current.leaseLive) {
        return {
          kind: 'in-progress',
          ownerId: row.owner_id ?? undefined,
          leaseUntil: toRecord(row).leaseUntil,
          attempts,
        };
      }
      // FAILED_RETRYABLE or a lapsed lease appeared after the upsert looked: go again.
      last = { ownerId: row.owner_id ?? undefined, leaseUntil: toRecord(row).leaseUntil, attempts };
    }
    // The row kept changing under us; report it as busy rather than loop forever.
    return { kind: 'in-progress', ...last };
  }

  function serializeResponse(record: RecordKey, response: unknown): string {
    let json: string | undefined;
    try {
      json = JSON.stringify(response === undefined ? null : response);
    } catch (error) {
      throw new InvalidOperationInputError(
        'the response cannot be serialized to JSON',
        { ...record },
        error,
      );
    }
    // A bare function or symbol serializes to undefined.
    if (json === undefined) json = 'null';
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > maxResponseBytes) {
      throw new ResponseTooLargeError(record.operation, record.key, bytes, maxResponseBytes);
    }
    return json;
  }

  async function leaseLost(ref: OperationRef, action: string): Promise<LeaseLostError> {
    const current = await readRow(knex, names, ref).catch(() => undefined);
    count(ref.operation, 'lease_lost');
    const error = new LeaseLostError(
      ref,
      { ownerId: current?.row.owner_id ?? undefined, status: current?.row.status },
      action,
    );
    logger.warn('owner lost its reservation', { ...error.details });
    return error;
  }

  async function finalize(ref: OperationRef, final: Final, action: string): Promise<void> {
    const matched = await finalizeRow(knex, names, ref, ref.ownerId, final, ref.retentionMs);
    if (!matched) throw await leaseLost(ref, action);
  }

  async function complete(ref: OperationRef, response: unknown): Promise<unknown> {
    const json = serializeResponse(ref, response);
    await finalize(ref, { status: 'SUCCEEDED', responseJson: json }, 'complete');
    return JSON.parse(json) as unknown;
  }

  async function fail(
    ref: OperationRef,
    error: unknown,
    failOptions: { readonly retryable: boolean },
  ): Promise<void> {
    const status = failOptions?.retryable === true ? 'FAILED_RETRYABLE' : 'FAILED_FINAL';
    await finalize(
      ref,
      { status, errorJson: JSON.stringify(describeError(error)) },
      status === 'FAILED_RETRYABLE' ? 'fail (retryable)' : 'fail (final)',
    );
  }

  async function extendLease(
    ref: OperationRef,
    ms?: number,
  ): Promise<{ leaseUntil: Date; dbNow: Date }> {
    const extendMs = durationInput(ms, 'ms', leaseMs, 1);
    const extended = await extendLeaseRow(knex, names, ref, ref.ownerId, extendMs);
    if (extended === undefined) throw await leaseLost(ref, 'extend the lease of');
    return extended;
  }

  async function execute<R>(
    reservation: Extract<Reservation, { kind: 'acquired' }>,
    effect: OperationEffect<R>,
    callerSignal: AbortSignal | undefined,
  ): Promise<R> {
    const { ref } = reservation;
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const armLeaseTimer = (remainingMs: number): void => {
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(
        () => {
          controller.abort(new LeaseLostError(ref, {}, 'keep holding'));
        },
        Math.max(0, remainingMs),
      );
      timer.unref?.();
    };
    const onCallerAbort = (): void => controller.abort(callerSignal?.reason);
    if (callerSignal?.aborted) controller.abort(callerSignal.reason);
    else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    armLeaseTimer(reservation.leaseRemainingMs);

    const context: OperationContext = {
      key: ref.key,
      scope: ref.scope,
      operation: ref.operation,
      ownerId: ref.ownerId,
      attempt: ref.attempt,
      signal: controller.signal,
      extendLease: async (ms?: number) => {
        let extended: { leaseUntil: Date; dbNow: Date };
        try {
          extended = await extendLease(ref, ms);
        } catch (error) {
          if (isLeaseLostError(error)) controller.abort(error);
          throw error;
        }
        if (!controller.signal.aborted) {
          armLeaseTimer(extended.leaseUntil.getTime() - extended.dbNow.getTime());
        }
        return extended.leaseUntil;
      },
    };

    const started = performance.now();
    let response: R;
    try {
      response = await effect(context);
    } catch (error) {
      effectDuration.record(performance.now() - started, { operation: ref.operation });
      cleanup();
      count(ref.operation, 'effect_failed');
      const retryable = safeIsRetryable(error);
      try {
        await fail(ref, error, { retryable });
      } catch (recordError) {
        // The effect's own error is what the caller must see; the record stays as it is
        // (another owner's, or IN_PROGRESS until its lease runs out).
        logger.warn('could not record the failure of an operation', {
          ...recordKeyOf(ref),
          ownerId: ref.ownerId,
          error: describeError(recordError),
        });
      }
      throw error;
    }
    effectDuration.record(performance.now() - started, { operation: ref.operation });
    cleanup();

    let json: string;
    try {
      json = serializeResponse(ref, response);
    } catch (error) {
      // The effect ran but its result cannot be stored: record a final failure so that no
      // duplicate runs the effect a second time, and tell this caller why.
      await fail(ref, error, { retryable: false }).catch((recordError: unknown) => {
        logger.warn('could not record an unstorable response', {
          ...recordKeyOf(ref),
          error: describeError(recordError),
        });
      });
      throw error;
    }
    await finalize(ref, { status: 'SUCCEEDED', responseJson: json }, 'complete');
    count(ref.operation, 'executed');
    return JSON.parse(json) as R;

    function cleanup(): void {
      if (timer !== undefined) clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    }
  }

  function safeIsRetryable(error: unknown): boolean {
    try {
      return isRetryable(error) === true;
    } catch (classifyError) {
      logger.warn('isRetryable threw; treating the failure as retryable', {
        error: describeError(classifyError),
      });
      return true;
    }
  }

  /** Waits until the record may have changed from a live IN_PROGRESS, or the deadline. */
  async function waitForOwner(
    record: RecordKey,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return;
      await systemClock.sleep(Math.min(pollIntervalMs, remaining), signal);
      const current = await readRow(knex, names, record);
      if (
        current === undefined ||
        current.expired ||
        current.row.status !== 'IN_PROGRESS' ||
        !current.leaseLive
      ) {
        return;
      }
    }
  }

  return {
    async run<R>(
      key: string,
      request: unknown,
      effect: OperationEffect<R>,
      given?: RunOptions,
    ): Promise<R> {
      if (typeof effect !== 'function') {
        throw new InvalidOperationInputError('run needs an effect function');
      }
      const runOptions = callOptions<RunOptions>(given, 'run');
      const record = target(key, runOptions);
      const hash = requestHash(request);
      const retentionMs = durationInput(
        runOptions.retentionMs,
        'retentionMs',
        defaultRetentionMs,
        1,
      );
      const waitMs = durationInput(
        runOptions.waitForInProgressMs,
        'waitForInProgressMs',
        defaultWaitMs,
        0,
      );
      const signal = runOptions.signal;
      const started = Date.now();
      const deadline = started + waitMs;
      for (;;) {
        if (signal?.aborted) throw signal.reason;
        const reservation = await reserveRecord(record, hash, retentionMs);
        switch (reservation.kind) {
          case 'acquired':
            return execute(reservation, effect, signal);
          case 'completed':
            count(record.operation, 'replayed');
            return reservation.response as R;
          case 'failed':
            count(record.operation, 'failure_replayed');
            throw new OperationFailedError(
              record.scope,
              record.operation,
              record.key,
              reservation.failure,
            );
          case 'in-progress':
            if (Date.now() >= deadline) {
              count(record.operation, 'in_progress');
              throw new OperationInProgressError(
                record.scope,
                record.operation,
                record.key,
                reservation.leaseUntil,
                Date.now() - started,
              );
            }
            await waitForOwner(record, deadline, signal);
            break;
        }
      }
    },

    async reserve(key, request, given) {
      const reserveOptions = callOptions<ReserveOptions>(given, 'reserve');
      const record = target(key, reserveOptions);
      const retentionMs = durationInput(
        reserveOptions.retentionMs,
        'retentionMs',
        defaultRetentionMs,
        1,
      );
      return reserveRecord(record, requestHash(request), retentionMs);
    },

    // Async, so that a bad ref rejects like every other refusal instead of throwing.
    complete: async (ref, response) => complete(refInput(ref, 'complete'), response),
    fail: async (ref, error, failOptions) => fail(refInput(ref, 'fail'), error, failOptions),

    async extendLease(ref, ms) {
      return (await extendLease(refInput(ref, 'extendLease'), ms)).leaseUntil;
    },

    async get(key, getOptions): Promise<OperationRecord | undefined> {
      const record = target(key, callOptions<RunOptions>(getOptions, 'get'));
      const current = await readRow(knex, names, record);
      if (current === undefined || current.expired) return undefined;
      return toRecord(current.row);
    },
  };
}

function recordKeyOf(ref: RecordKey): RecordKey {
  return { scope: ref.scope, operation: ref.operation, key: ref.key };
}

/** Default `isRetryable`: the error's own `retriable` flag, else retryable. */
function defaultIsRetryable(error: unknown): boolean {
  if (error !== null && typeof error === 'object') {
    const flag = (error as { retriable?: unknown }).retriable;
    if (typeof flag === 'boolean') return flag;
  }
  return true;
}

/**
 * Diagnostic text as the `error` column (jsonb) can hold it: at most `max` characters, not
 * ending in half a surrogate pair, U+0000 and lone surrogates made storable.
 */
function storedText(text: string, max = MAX_STORED_MESSAGE): string {
  let cut = text.length > max ? text.slice(0, max) : text;
  const last = cut.charCodeAt(cut.length - 1);
  if (cut.length < text.length && last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return storableDiagnostic(cut);
}

/** `String(value)`, or a placeholder when that throws (a null-prototype object, a Proxy). */
function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return `[unprintable ${typeof value}]`;
  }
}

/**
 * The stored form of an error: name, message (cut short) and code, whatever was thrown, in
 * text the `error` column accepts (a message with U+0000 must not fail the write that
 * records the failure).
 */
function describeError(error: unknown): StoredOperationError {
  if (error !== null && typeof error === 'object') {
    const raw = error as { name?: unknown; message?: unknown; code?: unknown };
    const name = typeof raw.name === 'string' ? storedText(raw.name, MAX_STORED_NAME) : 'Error';
    const message = storedText(typeof raw.message === 'string' ? raw.message : safeString(error));
    return typeof raw.code === 'string'
      ? { name, message, code: storedText(raw.code, MAX_STORED_NAME) }
      : { name, message };
  }
  return { name: 'Error', message: storedText(safeString(error)) };
}
