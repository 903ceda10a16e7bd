import type { ResilienceWindow } from '../resilience/types';
import type { CircuitState } from '../retry/circuit-breaker';

/** One breaker of a consumer as it last reported it in {@link ConsumerResilience}. */
export interface BreakerStatus {
  /** The breaker key (`*`: the whole consumer). */
  readonly key: string;
  /** `open`: no new work is taken; `half-open`: one probe goes through; `closed`: normal. */
  readonly state: CircuitState;
  /** Since when the breaker is in this state (the consumer's clock). */
  readonly since: Date;
}

/**
 * One consumer's retry budget and circuit breakers (docs/load-shedding.md), as its process
 * last reported them: on every breaker change and every few seconds while it works. Several
 * processes of one consumer overwrite each other's report; the newest wins.
 */
export interface ConsumerResilience {
  readonly consumer: string;
  /** When the consumer last reported (the database's clock). */
  readonly reportedAt: Date;
  /**
   * No report for `RESILIENCE_STALE_SECONDS` (30): the consumer is idle, stopped, or cannot
   * write. The figures are its last ones, not the state now.
   */
  readonly stale: boolean;
  /** Whole retries the budget allowed at the report; `null` without a budget. */
  readonly budgetRemaining: number | null;
  /** What the consumer counted over the budget's window before the report. */
  readonly window: ResilienceWindow;
  /**
   * Its breakers, those not closed first, at most 20; empty without a breaker. `*` is the
   * whole consumer's breaker.
   */
  readonly breakers: readonly BreakerStatus[];
}
