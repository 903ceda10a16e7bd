import { durationOption } from '../config/options';
import { startLoop, stopLoop, type LoopState } from './background-loop';
import { DEFAULT_INTERVAL_MS, resolveRetentionOptions } from './options';
import { runOnce } from './run-once';
import { createRetentionRuntime } from './runtime';
import type { Retention, RetentionOptions } from './types';

/**
 * The retention job (DESIGN guarantee 4): deletes dedup records once they are past their
 * `expires_at` and older than the retention window, stale inbox attempt counters, and (opt
 * in) old dead letters. Each batch is one short `DELETE` over rows picked with
 * `FOR UPDATE SKIP LOCKED`, so the job never waits for a writer and a writer never waits
 * for more than one batch. A window shorter than the transport's redelivery horizon is
 * refused at construction with {@link RetentionTooShortError}.
 *
 * ```ts
 * const retention = createRetention({ store, retentionMs: 7 * DAY, redeliveryHorizonMs: 4 * DAY });
 * retention.start(60_000);
 * // on shutdown
 * await retention.stop();
 * ```
 */
export function createRetention(options: RetentionOptions): Retention {
  const runtime = createRetentionRuntime(resolveRetentionOptions(options));
  let loop: LoopState | undefined = undefined;

  return {
    retentionMs: runtime.options.retentionMs,
    runOnce: (runOptions) => runOnce(runtime, runOptions),

    start(intervalMs = DEFAULT_INTERVAL_MS) {
      // Validated before the already-started check, so a bad interval is refused either way.
      const every = durationOption(intervalMs, 'intervalMs', DEFAULT_INTERVAL_MS, 1);
      if (loop !== undefined) return;
      loop = startLoop(runtime, every);
    },

    async stop() {
      const state = loop;
      if (state === undefined) return;
      loop = undefined;
      await stopLoop(state);
    },
  };
}
