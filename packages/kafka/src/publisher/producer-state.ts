import { errorChain } from '@justonce/core';

/**
 * Broker errors that mean the producer's idempotence state (producer id, epoch, per-partition
 * sequence numbers) no longer matches the broker's. kafkajs neither fixes nor forgets it: it
 * rolls its sequence numbers back after a failed request, so every later send is refused the
 * same way. Only a new producer (new id, sequences from zero) gets out of it.
 */
const PRODUCER_STATE_ERRORS: ReadonlyMap<number, string> = new Map([
  [45, 'OUT_OF_ORDER_SEQUENCE_NUMBER'],
  [46, 'DUPLICATE_SEQUENCE_NUMBER'],
  [47, 'INVALID_PRODUCER_EPOCH'],
  [49, 'INVALID_PRODUCER_ID_MAPPING'],
  [59, 'UNKNOWN_PRODUCER_ID'],
  [90, 'PRODUCER_FENCED'],
]);
const PRODUCER_STATE_TYPES = new Set(PRODUCER_STATE_ERRORS.values());

/**
 * The broker error type, anywhere in the cause chain of `error`, that calls for a new
 * producer (see {@link PRODUCER_STATE_ERRORS}), or `undefined`. Follows `cause` (kafkajs's
 * `KafkaJSNumberOfRetriesExceeded` and `KafkaJSNonRetriableError` wrap the protocol error
 * there), `originalError` and the `errors` of aggregate errors. Matches kafkajs's `type`,
 * @platformatic/kafka's `apiId`, or
 * the numeric broker `code` other KafkaJS-compatible clients report; kafkajs 2.2 has no name
 * for code 90 and reports it as `KAFKAJS_UNKNOWN_ERROR_CODE` "Unknown error code 90".
 */
export function producerStateError(error: unknown): string | undefined {
  for (const e of errorChain(error)) {
    if (typeof e.type === 'string' && PRODUCER_STATE_TYPES.has(e.type)) return e.type;
    // @platformatic/kafka names the broker error in `apiId`.
    if (typeof e.apiId === 'string' && PRODUCER_STATE_TYPES.has(e.apiId)) return e.apiId;
    if (typeof e.code === 'number' && PRODUCER_STATE_ERRORS.has(e.code)) {
      return PRODUCER_STATE_ERRORS.get(e.code);
    }
    if (
      e.type === 'KAFKAJS_UNKNOWN_ERROR_CODE' &&
      typeof e.message === 'string' &&
      /\bcode 90$/.test(e.message)
    ) {
      return 'PRODUCER_FENCED';
    }
  }
  return undefined;
}

/**
 * Backoff before a rebuilt producer connects, from the second rebuild in a row without a
 * successful send: the first rebuild (a broken idempotence state) recovers at once, while a
 * broker that stays unreachable is not met with a new producer per relay cycle.
 */
const REBUILD_BACKOFF = { baseMs: 500, capMs: 5_000 };

/** The delay before the `n`th consecutive rebuild connects: 0, then 0.25–0.5, 0.5–1, … up to 2.5–5 s. */
export function rebuildDelayMs(n: number, random: () => number = Math.random): number {
  if (n <= 1) return 0;
  const ceiling = Math.min(REBUILD_BACKOFF.capMs, REBUILD_BACKOFF.baseMs * 2 ** (n - 2));
  // Half fixed, half jitter: never 0, so a run of failures really slows down.
  return Math.floor(ceiling / 2 + (ceiling / 2) * random());
}
