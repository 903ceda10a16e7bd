import { NEVER_ABORTED } from '../common/signals';
import { createActivityRecorder } from './activity';
import { setInboxReporting } from './reporting';
import { createInstruments } from './instruments';
import { resolveInboxOptions } from './options';
import { processBatch } from './process-batch';
import { processOne } from './process-one';
import { processWatermarked } from './watermark/process';
import type { InboxRuntime } from './runtime';
import type { Handler, Inbox, InboxOptions, InboxOutcome, InboxProcessOptions } from './types';
import type { Knex } from 'knex';
import { ConfigurationError } from '../errors/configuration-error';
import type { Envelope } from '../transport/envelope';
import { InvalidEnvelopeError } from './errors/invalid-envelope-error';
import { StoreUnavailableError } from '../errors/store-unavailable-error';
import { isInfrastructureFailure, storeOutage } from './outage';
import { messagingOption } from '../observability/tracing';
import { processBatchTraced, processTraced } from './trace-process';

/** What `step` returns when there is no `onStep` hook: nothing to wait for. */
const NO_STEP: Promise<void> = Promise.resolve();

/** Refuses what is not an envelope object: a caller's bug, with nothing to dead-letter. */
function checkEnvelope(envelope: unknown, index?: number): asserts envelope is Envelope {
  if (typeof envelope === 'object' && envelope !== null && !Array.isArray(envelope)) return;
  const at = index === undefined ? '' : ` (#${index})`;
  throw new InvalidEnvelopeError(
    `an envelope must be an object with id, headers, body and delivery${at}, got ${
      envelope === null ? 'null' : Array.isArray(envelope) ? 'an array' : typeof envelope
    }`,
    index === undefined ? {} : { index },
  );
}

/**
 * Whatever escapes processing: an outage of the store not yet reported as one (a failed
 * count, read or dead-letter write) becomes {@link StoreUnavailableError}; the rest (an
 * `onStep` hook's throw) passes unchanged.
 */
async function rethrowAsOutage(rt: InboxRuntime, error: unknown): Promise<never> {
  if (error instanceof StoreUnavailableError || !isInfrastructureFailure(rt, error, false)) {
    throw error;
  }
  throw await storeOutage(rt, error, []);
}

function checkHandler(handler: unknown): void {
  if (typeof handler !== 'function') {
    throw new ConfigurationError('the handler must be a function', { type: typeof handler });
  }
}

function signalOf(options: InboxProcessOptions | undefined): AbortSignal {
  const signal = options?.signal;
  if (signal === undefined) return NEVER_ABORTED;
  if (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean') {
    throw new ConfigurationError('signal must be an AbortSignal');
  }
  return signal;
}

/**
 * Creates the transactional inbox of one consumer. Options are validated here: a bad one
 * throws a {@link ConfigurationError}.
 *
 * `process` inserts the dedup record `(scope, consumer, message id)` with
 * `insert … on conflict do nothing` in the same transaction as the handler's writes, so the
 * handler's effect commits at most once per message; the transport acknowledges only after
 * `process` resolves with an outcome that says so. `process` never throws for handler
 * errors or bad input (they become outcomes); it throws when the database cannot be reached
 * or an `onStep` hook throws, and then the transport must not acknowledge.
 *
 * @example
 * ```ts
 * const inbox = createInbox({ store, consumer: 'billing', decode: (b) => JSON.parse(String(b)) });
 * const outcome = await inbox.process(envelope, async ({ trx, payload, outbox }) => {
 *   await trx.raw('insert into invoices (order_id) values (?)', [(payload as Order).id]);
 *   await outbox.add({ destination: 'invoices', payload: { orderId: (payload as Order).id } });
 * });
 * if (outcome.status === 'failed') nackWithDelay(outcome.retryDelayMs);
 * else ack();
 * ```
 */
export function createInbox<Tx = Knex.Transaction>(options: InboxOptions<Tx>): Inbox<Tx> {
  const resolved = resolveInboxOptions(options as InboxOptions<unknown>);
  const { onStep } = resolved;
  const runtime: InboxRuntime = {
    options: resolved,
    instruments: createInstruments(resolved),
    activity: createActivityRecorder({
      store: resolved.store,
      consumer: resolved.consumer,
      logger: resolved.logger,
      flushMs: resolved.activityFlushMs,
    }),
    step:
      onStep === undefined
        ? () => NO_STEP
        : async (step, messageId) => {
            await onStep(step, messageId);
          },
  };
  const inbox: Inbox<Tx> = {
    consumer: resolved.consumer,
    settings: Object.freeze({
      consumer: resolved.consumer,
      maxAttempts: resolved.maxAttempts,
      defaultScope: resolved.defaultScope,
      retentionMs: resolved.retentionMs,
      dedup: resolved.dedup,
    }),
    process: async <R>(
      envelope: Envelope,
      handler: Handler<R, Tx>,
      processOptions?: InboxProcessOptions,
    ) => {
      checkEnvelope(envelope);
      checkHandler(handler);
      const signal = signalOf(processOptions);
      // The adapter checked at construction opens transactions of type Tx.
      const work = (): Promise<InboxOutcome<R>> =>
        resolved.dedup === 'ids'
          ? processOne(runtime, envelope, handler as Handler<R, unknown>, signal)
          : processWatermarked(runtime, [envelope], handler as Handler<R, unknown>, signal).then(
              ([outcome]) => outcome as InboxOutcome<R>,
            );
      return processTraced(
        envelope,
        resolved.consumer,
        messagingOption(processOptions?.messaging, 'inbox.process'),
        work,
      ).catch((error: unknown) => rethrowAsOutage(runtime, error));
    },
    processBatch: async <R>(
      envelopes: readonly Envelope[],
      handler: Handler<R, Tx>,
      processOptions?: InboxProcessOptions,
    ) => {
      if (!Array.isArray(envelopes)) {
        throw new InvalidEnvelopeError('processBatch takes an array of envelopes', {
          type: envelopes === null ? 'null' : typeof envelopes,
        });
      }
      envelopes.forEach((envelope: unknown, index) => checkEnvelope(envelope, index));
      checkHandler(handler);
      const run = resolved.dedup === 'ids' ? processBatch : processWatermarked;
      const signal = signalOf(processOptions);
      return processBatchTraced(
        envelopes,
        resolved.consumer,
        messagingOption(processOptions?.messaging, 'inbox.processBatch'),
        () => run(runtime, envelopes, handler as Handler<R, unknown>, signal),
      ).catch((error: unknown) => rethrowAsOutage(runtime, error));
    },
    flushActivity: () => runtime.activity.flush(),
  };
  if (resolved.activityFlushMs > 0) {
    setInboxReporting(inbox, { store: resolved.store, logger: resolved.logger });
  }
  return inbox;
}
