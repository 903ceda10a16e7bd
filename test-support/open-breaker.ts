/**
 * A consumer whose circuit breaker is open, for the tests of what `justonce status` and the
 * dashboard show: a memory-broker consumer with a real inbox on `store` and `resilience` set,
 * whose handler always fails, so its breaker opens after two failures and stays open (60 s).
 * Resolves once `admin.status()` reports it open.
 *
 * ```ts
 * const shedding = await openBreaker(store, 'payments');
 * // … status shows payments' breaker open …
 * await shedding.stop();
 * ```
 */
import { createAdmin, createInbox, type Store } from '@justonce/core';
import type { ConsumerResilience } from '@justonce/core/admin';
import { createMemoryBroker } from '@justonce/core/testing';
import { waitFor } from './wait-for';

export interface OpenBreaker {
  /** What `admin.status()` reported once the breaker was open. */
  readonly reported: ConsumerResilience;
  /** Stops the consumer and closes the broker; again, does nothing. */
  stop(): Promise<void>;
}

export async function openBreaker(store: Store, consumer: string): Promise<OpenBreaker> {
  const broker = createMemoryBroker();
  const none = (): void => undefined;
  const inbox = createInbox({
    store,
    consumer,
    maxAttempts: 5,
    backoff: { baseMs: 10, capMs: 20 },
    logger: { debug: none, info: none, warn: none, error: none },
  });
  const running = broker.consume(consumer, {
    inbox,
    handler: async () => {
      throw new Error('the downstream is down');
    },
    resilience: { breaker: { trip: { consecutiveFailures: 2 }, openMs: 60_000 } },
  });
  await running.start();
  broker.send(
    consumer,
    [1, 2, 3].map((n) => ({ id: `m-${n}`, body: String(n) })),
  );
  const admin = createAdmin(store);
  const reported = await waitFor(`${consumer}'s open breaker in status`, async () =>
    (await admin.status()).resilience.find(
      (c) => c.consumer === consumer && c.breakers[0]?.state === 'open',
    ),
  );
  let stopped: Promise<void> | undefined;
  return {
    reported,
    stop: () => (stopped ??= running.stop().then(() => broker.close())),
  };
}
