import type { Logger } from '../observability/logger';
import type { Clock } from '../retry/clock';
import { WHOLE_CONSUMER_KEY } from './gate';
import type { ResilienceEvent } from './types';

/**
 * A transport's intake, which the resilience layer stops while the consumer's breaker is open
 * (docs/load-shedding.md): RabbitMQ cancels its consumer, SQS stops receiving. Both calls may
 * come more than once in a row and must be idempotent; neither may throw (a broker fault is
 * the transport's to log and recover from).
 */
export interface Intake {
  /** Take no new deliveries; the breaker lets its probe through in `probeInMs` milliseconds. */
  pause(probeInMs: number): void;
  /** Take deliveries again: the open interval ended (the next delivery is the probe) or the breaker closed. */
  resume(): void;
}

/** What a transport hands to `resilience.drive`: where to log, and its intake if it has one. */
export interface IntakeDriving {
  readonly logger: Logger;
  /** Paused while the whole-consumer breaker is open; absent when the transport holds instead. */
  readonly intake?: Intake;
}

/**
 * Turns the breaker events of the consumer `name` into intake calls and log lines: each open
 * is warned once (not each delivery it holds), each close noted; the breaker of the whole
 * consumer ({@link WHOLE_CONSUMER_KEY}) pauses the intake for its open interval, then resumes
 * it so the probe can arrive. A per-key breaker only holds its own key's deliveries: stopping
 * the intake would stop the other keys too. @internal
 */
export class IntakeDriver {
  private readonly driven = new Set<IntakeDriving>();
  /** Ends the wait for the half-open moment (a new open, a close, a detach). */
  private waiting: AbortController | undefined;

  constructor(
    private readonly name: string,
    private readonly openMs: number,
    private readonly clock: Clock,
  ) {}

  /** Starts driving `driving`; returns the function that stops (call it at the consumer's stop). */
  attach(driving: IntakeDriving): () => void {
    this.driven.add(driving);
    return () => {
      this.driven.delete(driving);
      if (this.driven.size === 0) this.stopWaiting();
    };
  }

  /** Called for every event of the gate. */
  onEvent(event: ResilienceEvent): void {
    if (event.type !== 'breaker' || this.driven.size === 0) return;
    const { key, to, from } = event;
    if (to === 'open') {
      const until = new Date(Date.now() + this.openMs).toISOString();
      for (const { logger } of this.driven) {
        logger.warn(`circuit open for consumer ${this.name} (key ${key}) until ${until}`, {
          consumer: this.name,
          key,
          from,
          openMs: this.openMs,
        });
      }
      if (key === WHOLE_CONSUMER_KEY) this.pause();
    } else if (to === 'closed') {
      for (const { logger } of this.driven) {
        logger.info(`circuit closed for consumer ${this.name} (key ${key})`, {
          consumer: this.name,
          key,
        });
      }
      if (key === WHOLE_CONSUMER_KEY) this.resume();
    }
  }

  private pause(): void {
    this.stopWaiting();
    for (const { intake } of this.driven) intake?.pause(this.openMs);
    const waiting = new AbortController();
    this.waiting = waiting;
    this.clock.sleep(this.openMs, waiting.signal).then(
      () => {
        if (this.waiting !== waiting) return;
        this.waiting = undefined;
        // Half-open: the next delivery is the probe, so it must be able to arrive.
        for (const { intake } of this.driven) intake?.resume();
      },
      () => undefined, // a new open, a close or a detach ended the wait
    );
  }

  private resume(): void {
    this.stopWaiting();
    for (const { intake } of this.driven) intake?.resume();
  }

  private stopWaiting(): void {
    this.waiting?.abort();
    this.waiting = undefined;
  }
}

/**
 * `inbox.resilience.drive(driving)` when `inbox` is behind a `resilience` option
 * (`withResilience`), else nothing: what a transport calls at start. Returns the
 * function to call at stop. @internal
 */
export function driveIntake(inbox: object, driving: IntakeDriving): () => void {
  const resilience = (inbox as { resilience?: { drive?: unknown } }).resilience;
  if (typeof resilience?.drive !== 'function') return () => undefined;
  return (resilience.drive as (d: IntakeDriving) => () => void).call(resilience, driving);
}
