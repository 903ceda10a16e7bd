import { execute } from './execute';
import { RUN_KEYS } from './input';
import { prepareCall } from './prepare-call';
import { reserveOrReplay } from './reserve-or-replay';
import type { OperationsRuntime } from './runtime';
import type { OperationEffect, RunOptions } from './types';

/**
 * `Operations.run`: reserve the key, then run the effect if this call acquired it, replay
 * the stored response or failure if it is settled, or wait for the owner (up to
 * `waitForInProgressMs`) and look again. @internal
 */
export async function run<R>(
  rt: OperationsRuntime,
  key: string,
  request: unknown,
  effect: OperationEffect<R>,
  given?: RunOptions,
): Promise<R> {
  const call = prepareCall<RunOptions>(rt, 'run', RUN_KEYS, { key, request, effect }, given);
  return reserveOrReplay(rt, call, (reservation) => execute(rt, reservation, effect, call.signal));
}
