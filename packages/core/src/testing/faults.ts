import { ConfigurationError } from '../errors';
import type { InboxStep } from '../inbox/types';
import type { RandomSource } from './random';

/**
 * Where the in-memory broker can make a consumer "die": each {@link InboxStep} (through the
 * inbox's `onStep` option, so the open transaction rolls back), and
 * `after-commit-before-ack`, where the broker itself skips the acknowledgement of a delivery
 * whose transaction committed. Either way the message is redelivered, as after a real crash.
 */
export type CrashPoint = InboxStep | 'after-commit-before-ack';

const POINT_ORDER: Record<CrashPoint, number> = {
  received: 0,
  'attempt-counted': 1,
  'handler-done': 2,
  committed: 3,
  'after-commit-before-ack': 4,
};

/** Every {@link CrashPoint}, in the order a delivery passes them. */
export const CRASH_POINTS: readonly CrashPoint[] = (Object.keys(POINT_ORDER) as CrashPoint[]).sort(
  (a, b) => POINT_ORDER[a] - POINT_ORDER[b],
);

/** Faults the broker injects at random (with its seeded source) into every published message. */
export interface FaultRates {
  /**
   * Probability in `[0, 1]` that a message is delivered once more after its first
   * acknowledgement, as an at-least-once broker may do. Default 0.
   */
  readonly duplicateRate?: number;
  /** Probability that a message's first delivery goes to two handlers at once. Default 0. */
  readonly concurrentRate?: number;
  /** Probability that a message crashes once, at a crash point chosen at random. Default 0. */
  readonly crashRate?: number;
}

/** Explicit fault injection, per message id. Faults planned before a publish apply to it. */
export interface FaultInjector {
  /**
   * Delivers `messageId` `count` more times (default 1): after its first acknowledgement, or
   * at once when it was already acknowledged.
   */
  duplicate(messageId: string, count?: number): void;
  /** The next delivery of `messageId` goes to two handlers at the same time. */
  concurrent(messageId: string): void;
  /**
   * The next `times` deliveries of `messageId` (default 1) that reach `point` crash there: the
   * delivery is not acknowledged and the message comes back after the crash redelivery delay.
   */
  crash(point: CrashPoint, messageId: string, times?: number): void;
}

/** How many faults of each kind were actually injected so far. */
export interface InjectedFaults {
  /** Extra copies enqueued. */
  readonly duplicates: number;
  /** Deliveries that were handed to two handlers at once (counted once per pair). */
  readonly concurrent: number;
  /** Crashes that fired, per crash point. */
  readonly crashes: Readonly<Record<CrashPoint, number>>;
}

function checkRate(name: string, value: number | undefined): number {
  if (value === undefined) return 0;
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw new ConfigurationError(`${name} must be a number between 0 and 1`, { [name]: value });
  }
  return value;
}

/** Validates a count option: a positive integer. */
export function checkCount(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(`${name} must be a positive integer`, { [name]: value });
  }
  return value;
}

/**
 * The pending faults of one broker, by message id. Internal: the broker exposes it through
 * {@link FaultInjector} and its `onStep` hook.
 * @internal
 */
export class FaultPlan {
  private readonly duplicates = new Map<string, number>();
  private readonly concurrentIds = new Set<string>();
  private readonly crashes = new Map<string, Map<CrashPoint, number>>();
  private readonly rates: Required<FaultRates>;
  private injectedDuplicates = 0;
  private injectedConcurrent = 0;
  private readonly injectedCrashes: Record<CrashPoint, number> = {
    received: 0,
    'attempt-counted': 0,
    'handler-done': 0,
    committed: 0,
    'after-commit-before-ack': 0,
  };

  constructor(
    rates: FaultRates,
    private readonly random: RandomSource,
  ) {
    this.rates = {
      duplicateRate: checkRate('duplicateRate', rates.duplicateRate),
      concurrentRate: checkRate('concurrentRate', rates.concurrentRate),
      crashRate: checkRate('crashRate', rates.crashRate),
    };
  }

  addDuplicates(messageId: string, count: number): void {
    this.duplicates.set(messageId, (this.duplicates.get(messageId) ?? 0) + count);
  }

  /** Removes and returns the copies planned for `messageId`. */
  takeDuplicates(messageId: string): number {
    const count = this.duplicates.get(messageId) ?? 0;
    this.duplicates.delete(messageId);
    return count;
  }

  addConcurrent(messageId: string): void {
    this.concurrentIds.add(messageId);
  }

  takeConcurrent(messageId: string): boolean {
    const planned = this.concurrentIds.delete(messageId);
    if (planned) this.injectedConcurrent += 1;
    return planned;
  }

  addCrash(point: CrashPoint, messageId: string, times: number): void {
    if (!(point in POINT_ORDER)) {
      throw new ConfigurationError(`unknown crash point ${String(point)}`, {
        point,
        known: CRASH_POINTS,
      });
    }
    const byPoint = this.crashes.get(messageId) ?? new Map<CrashPoint, number>();
    byPoint.set(point, (byPoint.get(point) ?? 0) + times);
    this.crashes.set(messageId, byPoint);
  }

  /** True (and one fewer pending) when a crash is planned for `messageId` at `point`. */
  takeCrash(point: CrashPoint, messageId: string | undefined): boolean {
    if (messageId === undefined) return false;
    const byPoint = this.crashes.get(messageId);
    const left = byPoint?.get(point) ?? 0;
    if (!byPoint || left < 1) return false;
    if (left === 1) byPoint.delete(point);
    else byPoint.set(point, left - 1);
    if (byPoint.size === 0) this.crashes.delete(messageId);
    this.injectedCrashes[point] += 1;
    return true;
  }

  /** Draws the random faults of one newly published message and plans them. */
  planRandom(messageId: string | undefined): void {
    if (messageId === undefined) return;
    const { duplicateRate, concurrentRate, crashRate } = this.rates;
    if (duplicateRate > 0 && this.random() < duplicateRate) this.addDuplicates(messageId, 1);
    if (concurrentRate > 0 && this.random() < concurrentRate) this.addConcurrent(messageId);
    if (crashRate > 0 && this.random() < crashRate) {
      const point = CRASH_POINTS[Math.floor(this.random() * CRASH_POINTS.length)] as CrashPoint;
      this.addCrash(point, messageId, 1);
    }
  }

  countDuplicates(copies: number): void {
    this.injectedDuplicates += copies;
  }

  injected(): InjectedFaults {
    return {
      duplicates: this.injectedDuplicates,
      concurrent: this.injectedConcurrent,
      crashes: { ...this.injectedCrashes },
    };
  }
}
