import { errorMessage } from '../common/errors';
import { runOnce } from './run-once';
import type { RetentionRuntime } from './runtime';

/** The background loop's state while it is started. @internal */
export interface LoopState {
  readonly controller: AbortController;
  timer: ReturnType<typeof setTimeout> | undefined;
  current: Promise<void> | undefined;
}

/**
 * Starts passes every `everyMs`, the first at once. A pass cut short by its batch budget is
 * followed after only the batch pause, so a backlog drains without waiting a whole interval;
 * a failed pass is logged and tried again at the next interval. @internal
 */
export function startLoop(rt: RetentionRuntime, everyMs: number): LoopState {
  const state: LoopState = {
    controller: new AbortController(),
    timer: undefined,
    current: undefined,
  };
  const schedule = (delayMs: number): void => {
    if (state.controller.signal.aborted) return;
    state.timer = setTimeout(tick, delayMs);
    // The loop must not keep the process alive on its own.
    state.timer.unref?.();
  };
  const tick = (): void => {
    state.timer = undefined;
    state.current = runOnce(rt, { signal: state.controller.signal }).then(
      (result) => schedule(result.complete ? everyMs : rt.options.pauseMs),
      (error: unknown) => {
        rt.options.logger.error('retention pass failed; trying again at the next interval', {
          error: errorMessage(error),
        });
        schedule(everyMs);
      },
    );
  };
  schedule(0);
  return state;
}

/** Stops a started loop: aborts the pass in flight between batches and waits for it. @internal */
export async function stopLoop(state: LoopState): Promise<void> {
  state.controller.abort();
  if (state.timer !== undefined) clearTimeout(state.timer);
  await state.current;
}
