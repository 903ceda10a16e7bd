import type { KnexTransaction } from '@justonce/core';
import { consumerLifecycle, type ConsumerStopOptions } from '@justonce/core/transport';
import { resolveConsumerOptions } from './options';
import { createRuntime } from './runtime';
import { checkStopOptions, startConsumer, stopConsumer } from './start-stop';
import type { SqsConsumer, SqsConsumerOptions } from './types';

/**
 * Creates an SQS consumer: long polling with a concurrency limit, each message handled
 * through the inbox, so its effect commits once per message id however often SQS delivers
 * it. Options are validated here (a `ConfigurationError` for anything that cannot work);
 * what depends on the queue is checked by `start`. Its lifecycle is core's
 * `consumerLifecycle`: `start` once (again, or after `stop`: `ConsumerStateError`), `stop`
 * idempotent.
 *
 * What happens to a message, by core's `decide` / `decideOnThrow` (reported to `onSettled`):
 * - `processed`, `duplicate` — deleted (`DeleteMessageBatch`), only after the transaction
 *   committed: `acked` (`abandoned` when the delete failed for good).
 * - `failed` — made visible again after the retry delay (`ChangeMessageVisibility`):
 *   `redelivered`.
 * - `dead-lettered` — sent to the dead-letter queue when there is one, with its own
 *   attributes plus the shared `x-justonce-*` facts, then deleted: `dead-lettered`; the
 *   store holds the dead letter either way. A failed forward leaves it in flight: `released`.
 * - the store is unavailable (`process` throws `STORE_UNAVAILABLE`) — kept in flight by the
 *   heartbeat and tried again in-process with backoff until the store answers, so SQS's
 *   receive count does not rise: `held` each round; `released` at `stop`.
 * - `process` throws anything else — made visible again after a backoff: `released`.
 *
 * Every SQS call is time-limited (`timeouts`); an outage (a timeout, a lost connection, the
 * queue missing) is logged once, retried with capped backoff, and logged when it ends.
 *
 * While a message is held its visibility timeout is extended (the heartbeat); the
 * extension stops when its handler ends. On a FIFO queue, messages of one group are handled
 * one at a time in the order received; when one is held back for a retry, the group's later
 * messages in hand are released behind it.
 *
 * @example
 * ```ts
 * const consumer = createSqsConsumer({
 *   clientConfig: { region: 'eu-west-1' },
 *   queueUrl,
 *   inbox: createInbox({ store, consumer: 'billing', decode: (body) => JSON.parse(String(body)) }),
 *   handler: async ({ trx, payload }) => {
 *     await trx('invoices').insert({ order_id: (payload as { orderId: string }).orderId });
 *   },
 * });
 * await consumer.start();
 * process.once('SIGTERM', () => void consumer.stop());
 * ```
 */
export function createSqsConsumer<R = unknown, Tx = KnexTransaction>(
  options: SqsConsumerOptions<R, Tx>,
): SqsConsumer {
  // The consumer never touches the transaction: the inbox and the handler agree on Tx.
  const given = options as unknown as SqsConsumerOptions<R>;
  const resolved = resolveConsumerOptions(given);
  const rt = createRuntime(resolved, given);
  const lifecycle = consumerLifecycle(`SQS consumer of ${resolved.queueUrl}`, {
    start: () => startConsumer(rt),
    stop: (stopOptions) => stopConsumer(rt, stopOptions),
    inbox: resolved.inbox,
  });
  let stopped = false;
  return {
    start: () => lifecycle.start(),
    stop(stopOptions?: ConsumerStopOptions): Promise<void> {
      try {
        checkStopOptions(stopOptions);
      } catch (error) {
        return Promise.reject(error);
      }
      // The lifecycle calls no hook for a consumer never started: its client goes here.
      if (!rt.started && !stopped && rt.ownsClient) rt.client.destroy();
      stopped = true;
      return lifecycle.stop({
        ...stopOptions,
        timeoutMs: stopOptions?.timeoutMs ?? resolved.shutdownTimeoutMs,
      });
    },
    get running() {
      return lifecycle.running;
    },
    get inFlight() {
      return rt.held.size;
    },
    get queue() {
      return rt.setup?.info;
    },
  };
}
