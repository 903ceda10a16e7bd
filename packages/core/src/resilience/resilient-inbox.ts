import type { Meter } from '@opentelemetry/api';
import { ConfigurationError } from '../errors';
import type { Handler, Inbox, InboxOutcome, InboxProcessOptions } from '../inbox/types';
import { classifyError } from '../retry/classify';
import { CircuitOpenError } from '../retry/errors/circuit-open-error';
import type { Envelope } from '../transport/envelope';
import { RetryBudgetSpentError } from '../inbox/errors/retry-budget-spent-error';
import { createResilienceGate, type Admitted, type ResilienceGate } from './gate';
import { IntakeDriver, type IntakeDriving } from './intake';
import { resolveResilience } from './options';
import { inboxReporting } from '../inbox/reporting';
import { createStateRecorder, type StateRecorder } from './state-recorder';
import type { ResilienceOptions, ResilienceSnapshot } from './types';

/** An inbox behind a consumer's `resilience` option; see {@link withResilience}. */
export interface ResilientInbox<Tx> extends Inbox<Tx> {
  readonly resilience: {
    /** The breakers and the budget now. */
    snapshot(): ResilienceSnapshot;
    /**
     * Called by the transport at start: logs each breaker open once (warn) and each close,
     * and pauses `driving.intake` while the whole consumer's breaker is open, resuming it when
     * the probe may go through. Returns the function to call at stop.
     */
    drive(driving: IntakeDriving): () => void;
  };
}

/**
 * Whether a handler's error is a fault of what it calls (counts against the breaker): any
 * error the retry rules do not call final. A final one (`markNonRetriable`, a `FinalError`,
 * a 4xx) means the dependency answered.
 */
function isDependencyFailure(error: unknown): boolean {
  return classifyError(error) !== 'non-retriable';
}

/** Refuses a breaker that could let a message run out of attempts before it trips. */
function checkAgainstAttempts<Tx>(inbox: Inbox<Tx>, options: ResilienceOptions<Envelope>): void {
  if (options.breaker === false) return;
  const trip = options.breaker?.trip ?? { consecutiveFailures: 5 };
  if (!('consecutiveFailures' in trip)) return;
  const failures = trip.consecutiveFailures;
  const maxAttempts = inbox.settings?.maxAttempts;
  if (maxAttempts !== undefined && failures >= maxAttempts) {
    throw new ConfigurationError(
      `resilience.breaker.trip.consecutiveFailures (${failures}) must be below the inbox's ` +
        `maxAttempts (${maxAttempts}), or a message could be dead-lettered before the breaker opens`,
      { consecutiveFailures: failures, maxAttempts },
    );
  }
}

/** One delivery's (or batch's) way through the gate. */
class Passage<Tx> {
  failed = false;
  /** Envelopes whose retry the budget was asked for already (`whenSpent: 'dead-letter'`). */
  private readonly asked = new Set<Envelope>();

  constructor(
    private readonly gate: ResilienceGate<Envelope>,
    /** Each envelope's breaker key, computed once. */
    readonly keys: ReadonlyMap<Envelope, string>,
    private readonly admitted: ReadonlyMap<string, Admitted>,
    /** The inbox's `maxAttempts`, when it says: a last attempt is dead-lettered, not retried. */
    private readonly maxAttempts: number | undefined,
  ) {}

  /**
   * With `whenSpent: 'dead-letter'`, asks the budget for the retry of a failure as it
   * happens, so a refusal can become the handler's error: {@link RetryBudgetSpentError},
   * which the inbox dead-letters with reason `RETRY_BUDGET_SPENT` (an outage it still holds).
   */
  private spendNow(key: string, message: Envelope, attempt: number, error: unknown): void {
    if (this.gate.whenSpent !== 'dead-letter') return;
    if (this.maxAttempts !== undefined && attempt >= this.maxAttempts) return;
    this.asked.add(message);
    if (!this.gate.spend(key)) throw new RetryBudgetSpentError(attempt, error);
  }

  /** The handler, reporting to the breaker of its message's key as soon as it ends. */
  wrap<R>(handler: Handler<R, Tx>): Handler<R, Tx> {
    return async (ctx) => {
      const key = this.keys.get(ctx.message) ?? this.gate.keyOf(ctx.message);
      const admitted = this.admitted.get(key);
      try {
        const result = await handler(ctx);
        if (admitted) this.gate.report(admitted, 'success');
        return result;
      } catch (error) {
        if (!isDependencyFailure(error)) {
          if (admitted) this.gate.report(admitted, 'success');
          throw error;
        }
        this.failed = true;
        const waitMs = admitted ? this.gate.report(admitted, 'failure') : 0;
        // The breaker is open now: the failure is an outage, so the inbox gives the attempt
        // back and the transport holds the delivery instead of redelivering or dead-lettering.
        if (waitMs > 0) throw new CircuitOpenError(waitMs, ctx.attempt, error);
        this.spendNow(key, ctx.message, ctx.attempt, error);
        throw error;
      }
    };
  }

  /** Budget accounting of an outcome: first deliveries earn; a failed handler's retry spends. */
  settle<R>(outcome: InboxOutcome<R>, envelope: Envelope): InboxOutcome<R> {
    if (outcome.status !== 'duplicate' && outcome.attempt === 1) this.gate.earn();
    if (outcome.status !== 'failed' || !this.failed || this.asked.has(envelope)) return outcome;
    if (this.gate.spend(this.keys.get(envelope) ?? this.gate.keyOf(envelope))) return outcome;
    return { ...outcome, retryDelayMs: Math.max(outcome.retryDelayMs, this.gate.spentDelayMs) };
  }

  /** Frees the permits nothing was reported on (a duplicate, a throw before the handler). */
  release(): void {
    for (const admitted of this.admitted.values()) this.gate.report(admitted, 'neutral');
  }
}

/**
 * Puts `inbox` behind a retry budget and circuit breakers, the one implementation of every
 * consumer's `resilience` option (see docs/load-shedding.md):
 * - a delivery whose breaker is open is refused before the inbox runs: `process` throws
 *   {@link CircuitOpenError}, which core's `decideOnThrow` turns into `hold`, so the
 *   transport keeps it in flight (Kafka pauses the partition); a transport that passes its
 *   intake to `resilience.drive` stops taking deliveries while the whole consumer's breaker
 *   is open (RabbitMQ cancels its consumer, SQS stops receiving);
 * - a handler failure that opens the breaker (or fails the probe) becomes an outage: its
 *   attempt is given back and the delivery is held, never dead-lettered;
 * - a retriable failure the budget does not pay for is redelivered after `spentDelayMs`, or
 *   dead-lettered with reason `RETRY_BUDGET_SPENT` with `budget.whenSpent: 'dead-letter'`;
 * - the breakers and the budget are reported to the store's `consumer_resilience` (an inbox
 *   of `createInbox` with activity recording on), for `justonce status` and the dashboard.
 * Throws {@link ConfigurationError} on bad options. `context` names the factory in errors.
 */
export function withResilience<Tx>(
  inbox: Inbox<Tx>,
  options: ResilienceOptions<Envelope>,
  context: string,
  meter?: Meter,
): ResilientInbox<Tx> {
  const settings = resolveResilience<Envelope>(options, context);
  checkAgainstAttempts(inbox, options);
  const reporting = inboxReporting(inbox);
  const driver = new IntakeDriver(inbox.consumer, settings.breaker?.openMs ?? 0, settings.clock);
  const onEvent = settings.onEvent;
  // The gate calls back only once work flows, after `recorder` below is set.
  const gate = createResilienceGate(
    inbox.consumer,
    {
      ...settings,
      onEvent: (event) => {
        try {
          driver.onEvent(event);
        } finally {
          // A logger that throws must not keep the event from the user's listener.
          onEvent?.(event);
        }
      },
    },
    meter,
    (event) => recorder?.note(event.type === 'breaker'),
  );
  // Reported to the store for `justonce status` and the dashboard, off the hot path.
  const recorder: StateRecorder | undefined =
    reporting === undefined
      ? undefined
      : createStateRecorder(
          inbox.consumer,
          reporting,
          () => gate.snapshot(),
          settings.clock,
          settings.breaker?.openMs ?? 0,
        );

  /** Admits every distinct key of `envelopes`, or none (throwing the longest wait). */
  const admitAll = (envelopes: readonly Envelope[]): Passage<Tx> => {
    recorder?.note(false);
    const keys = new Map<Envelope, string>();
    const admitted = new Map<string, Admitted>();
    for (const envelope of envelopes) {
      const key = gate.keyOf(envelope);
      keys.set(envelope, key);
      if (admitted.has(key)) continue;
      const answer = gate.admit(key);
      if (!answer.admitted) {
        for (const a of admitted.values()) gate.report(a, 'neutral');
        throw new CircuitOpenError(answer.retryAfterMs, 0);
      }
      admitted.set(key, answer);
    }
    return new Passage<Tx>(gate, keys, admitted, inbox.settings?.maxAttempts);
  };

  return {
    consumer: inbox.consumer,
    ...(inbox.settings === undefined ? {} : { settings: inbox.settings }),
    resilience: {
      snapshot: () => gate.snapshot(),
      drive: (driving) => driver.attach(driving),
    },
    async process<R>(envelope: Envelope, handler: Handler<R, Tx>, opts?: InboxProcessOptions) {
      const passage = admitAll([envelope]);
      try {
        const outcome = await inbox.process(envelope, passage.wrap(handler), opts);
        return passage.settle(outcome, envelope);
      } finally {
        passage.release();
      }
    },
    async processBatch<R>(
      envelopes: readonly Envelope[],
      handler: Handler<R, Tx>,
      opts?: InboxProcessOptions,
    ) {
      const passage = admitAll(envelopes);
      try {
        const outcomes = await inbox.processBatch(envelopes, passage.wrap(handler), opts);
        return outcomes.map((o, i) => passage.settle(o, envelopes[i] as Envelope));
      } finally {
        passage.release();
      }
    },
    flushActivity: async () => {
      await Promise.all([inbox.flushActivity(), recorder?.flush()]);
    },
  };
}
