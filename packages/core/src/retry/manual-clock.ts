import type { Clock } from './clock';

/** A {@link Clock} whose time moves only when a test moves it. */
export interface ManualClock extends Clock {
  /** Number of sleeps that have neither fired nor been aborted. */
  readonly pendingTimers: number;
  /**
   * Moves time forward by `ms`, firing every sleep that falls due on the way in time order,
   * and lets the promise continuations each one triggers run before firing the next.
   */
  advance(ms: number): Promise<void>;
  /**
   * Fires pending sleeps one after another, jumping time to each, until none are left (or
   * `maxTimers` have fired, which guards against code that sleeps forever in a loop).
   */
  runAll(maxTimers?: number): Promise<void>;
}

interface Timer {
  readonly due: number;
  readonly seq: number;
  readonly resolve: () => void;
}

/** Lets every queued promise continuation run: a macrotask runs only once microtasks drain. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A clock for tests: `now()` starts at `startMs` and moves only through {@link ManualClock.advance}
 * or {@link ManualClock.runAll}; `sleep` never waits for real time.
 */
export function createManualClock(startMs = 0): ManualClock {
  let now = startMs;
  let seq = 0;
  const timers = new Set<Timer>();

  const next = (): Timer | undefined => {
    let earliest: Timer | undefined;
    for (const timer of timers) {
      if (
        earliest === undefined ||
        timer.due < earliest.due ||
        (timer.due === earliest.due && timer.seq < earliest.seq)
      ) {
        earliest = timer;
      }
    }
    return earliest;
  };

  const fire = (timer: Timer): void => {
    timers.delete(timer);
    now = Math.max(now, timer.due);
    timer.resolve();
  };

  return {
    now: () => now,
    get pendingTimers() {
      return timers.size;
    },
    sleep(ms: number, signal?: AbortSignal): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        const onAbort = (): void => {
          timers.delete(timer);
          reject(signal?.reason);
        };
        const timer: Timer = {
          due: now + Math.max(0, ms),
          seq: seq++,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        timers.add(timer);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    async advance(ms: number): Promise<void> {
      const target = now + ms;
      await settle();
      for (let timer = next(); timer !== undefined && timer.due <= target; timer = next()) {
        fire(timer);
        await settle();
      }
      now = Math.max(now, target);
    },
    async runAll(maxTimers = 10_000): Promise<void> {
      await settle();
      for (let fired = 0, timer = next(); timer !== undefined; timer = next()) {
        if (fired++ >= maxTimers) {
          throw new Error(`runAll fired ${maxTimers} timers and more are pending`);
        }
        fire(timer);
        await settle();
      }
    },
  };
}
