import { errorMessage } from '../common/errors';
import type { Logger } from '../observability/logger';

/**
 * `read` called at most once per `refreshMs` and one call at a time, its last good result
 * kept: what the observable gauges report when the SDK collects, however often and by however
 * many exporters. A failed read is logged with `what` and counts as a read too, so a database
 * that is down is not asked at every collection; the last good result is returned again.
 * Resolves to `undefined` until a read has succeeded. @internal
 */
export function cachedRead<T>(
  read: () => Promise<T>,
  refreshMs: number,
  logger: Logger,
  what: string,
): () => Promise<T | undefined> {
  let last: T | undefined;
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;
  return async () => {
    if (reading === undefined && performance.now() - readAt >= refreshMs) {
      readAt = performance.now();
      reading = read().then(
        (value) => {
          last = value;
        },
        (error: unknown) => {
          logger.warn(`${what} failed; last values kept`, { error: errorMessage(error) });
        },
      );
      void reading.finally(() => {
        reading = undefined;
      });
    }
    if (reading !== undefined) await reading;
    return last;
  };
}
