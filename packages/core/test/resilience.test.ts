/**
 * The `resilience` option on a consumer, with a real inbox (PostgreSQL) behind the memory
 * broker: the budget's slow path, per-key breakers, final errors, and the check against
 * `maxAttempts`. The transports' own run is the consumer contract's `resilience` clause.
 */
import { createInbox } from '../src/inbox/create-inbox';
import { createDeadLetters } from '../src/dead-letters/create-dead-letters';
import type { Handler } from '../src/inbox/types';
import { markNonRetriable } from '../src/retry/marks';
import type { ResilienceEvent, ResilienceOptions } from '../src/resilience/types';
import { withResilience } from '../src/resilience/resilient-inbox';
import type { SettledEvent } from '../src/consumer';
import type { Envelope } from '../src/transport/envelope';
import { createMemoryBroker, type MemoryBroker } from '../src/testing';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createResilienceGate } from '../src/resilience/gate';
import { resolveResilience } from '../src/resilience/options';
import { createManualClock } from '../src/retry/manual-clock';
import { openTestStore } from './db';
import { collect, TestReader } from './fixtures/metric-reader';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

let store: TestStore;
let broker: MemoryBroker;
let consumers = 0;

beforeAll(async () => {
  store = await openTestStore('postgres');
});
afterAll(async () => {
  await store.dispose();
});
beforeEach(() => {
  broker = createMemoryBroker();
});
afterEach(async () => {
  await broker.close();
});

/** A started consumer of a fresh queue; returns the queue and what it settled. */
async function consume(
  handler: Handler,
  resilience: ResilienceOptions<Envelope>,
  maxAttempts = 5,
): Promise<{ queue: string; settled: SettledEvent[] }> {
  consumers += 1;
  const queue = `resilience-${consumers}`;
  const settled: SettledEvent[] = [];
  const inbox = createInbox({
    store,
    consumer: `resilience-${process.pid}-${Date.now()}-${consumers}`,
    maxAttempts,
    backoff: { baseMs: 10, capMs: 20 },
  });
  const consumer = broker.consume(queue, {
    inbox,
    handler,
    resilience,
    concurrency: 4,
    onSettled: (event) => settled.push(event),
  });
  await consumer.start();
  return { queue, settled };
}

describe('a consumer with the resilience option', () => {
  it('a failure the budget cannot pay is redelivered after spentDelayMs, not the backoff', async () => {
    const events: ResilienceEvent[] = [];
    const calls = new Map<string, number>();
    const { queue, settled } = await consume(
      async (ctx) => {
        const n = (calls.get(ctx.messageId) ?? 0) + 1;
        calls.set(ctx.messageId, n);
        if (n === 1) throw new Error('the downstream blinked');
      },
      {
        breaker: false,
        // One retry per minute whatever the traffic, and 0 earned: the second failure is over.
        budget: { ratio: 0, minRetriesPerSecond: 1 / 60, windowMs: 60_000, spentDelayMs: 300 },
        onEvent: (event) => events.push(event),
      },
    );
    broker.send(queue, [
      { id: 'a', body: 'a' },
      { id: 'b', body: 'b' },
    ]);
    await broker.whenIdle({ timeoutMs: 10_000 });
    const delays = settled.filter((s) => s.action === 'redelivered').map((s) => s.delayMs ?? 0);
    expect(delays).toHaveLength(2);
    expect(Math.min(...delays)).toBeLessThanOrEqual(20);
    expect(Math.max(...delays)).toBe(300);
    expect(settled.filter((s) => s.action === 'acked')).toHaveLength(2);
    expect(events).toEqual([
      expect.objectContaining({ type: 'shed', reason: 'budget-spent', retryAfterMs: 300 }),
    ]);
  });

  it("with whenSpent 'dead-letter', a failure the budget cannot pay is dead-lettered as RETRY_BUDGET_SPENT", async () => {
    const calls = new Map<string, number>();
    const { queue, settled } = await consume(
      async (ctx) => {
        const n = (calls.get(ctx.messageId) ?? 0) + 1;
        calls.set(ctx.messageId, n);
        if (n === 1) throw new Error('the downstream blinked');
      },
      {
        breaker: false,
        // One retry per minute whatever the traffic, and 0 earned: the second failure is over.
        budget: {
          ratio: 0,
          minRetriesPerSecond: 1 / 60,
          windowMs: 60_000,
          whenSpent: 'dead-letter',
        },
      },
    );
    broker.send(queue, [
      { id: 'a', body: 'a' },
      { id: 'b', body: 'b' },
    ]);
    await broker.whenIdle({ timeoutMs: 10_000 });
    const dead = settled.filter((s) => s.action === 'dead-lettered');
    expect(dead).toHaveLength(1);
    expect(dead[0]!.deadLetter?.reason).toBe('RETRY_BUDGET_SPENT');
    // The other failure was paid for: an ordinary redelivery, then handled.
    const other = dead[0]!.messageId === 'a' ? 'b' : 'a';
    expect(settled.filter((s) => s.action === 'redelivered').map((s) => s.messageId)).toEqual([
      other,
    ]);
    expect(settled.filter((s) => s.action === 'acked').map((s) => s.messageId)).toEqual([other]);
    const letters = await createDeadLetters(store).list({
      consumer: dead[0]!.deadLetter!.consumer,
    });
    expect(letters.map((l) => [l.messageId, l.reason])).toEqual([
      [dead[0]!.messageId, 'RETRY_BUDGET_SPENT'],
    ]);
  });

  it("with whenSpent 'dead-letter', a failure the inbox's classify calls infrastructure stays an outage", async () => {
    class Down extends Error {}
    const consumer = `when-spent-outage-${process.pid}-${Date.now()}`;
    const inbox = withResilience(
      createInbox({
        store,
        consumer,
        classify: (error) => (error instanceof Down ? 'infrastructure' : undefined),
      }),
      {
        breaker: false,
        budget: {
          ratio: 0,
          minRetriesPerSecond: 1 / 60,
          windowMs: 60_000,
          whenSpent: 'dead-letter',
        },
      },
      'consume',
    );
    const envelope: Envelope = { id: 'outage', headers: {}, body: 'x', delivery: {} };
    const fail = async (): Promise<void> => {
      throw new Down('the downstream is down');
    };
    // The first failure is paid for, the second refused: both are outages all the same.
    for (let i = 0; i < 2; i++) {
      await expect(inbox.process(envelope, fail)).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    }
    expect(await createDeadLetters(store).list({ consumer })).toEqual([]);
  });

  it("refuses a whenSpent other than 'delay' or 'dead-letter'", () => {
    const inbox = createInbox({ store, consumer: 'when-spent-check' });
    expect(() =>
      withResilience(inbox, { budget: { whenSpent: 'drop' as 'delay' } }, 'consume'),
    ).toThrow(/whenSpent must be 'delay' or 'dead-letter'/);
  });

  it('per-key breakers: a failing tenant is held, another flows; nothing is dead-lettered', async () => {
    let downUntil = Date.now() + 1_000;
    const { queue, settled } = await consume(
      async (ctx) => {
        if (ctx.scope === 'down' && Date.now() < downUntil) throw new Error('tenant store down');
      },
      {
        budget: false,
        breaker: { trip: { consecutiveFailures: 2 }, openMs: 200, key: (e) => e.scope ?? '' },
      },
    );
    downUntil = Date.now() + 1_000;
    broker.send(queue, [
      ...['d1', 'd2', 'd3'].map((id) => ({ id, body: id, scope: 'down' })),
      ...['u1', 'u2', 'u3'].map((id) => ({ id, body: id, scope: 'up' })),
    ]);
    await broker.whenIdle({ timeoutMs: 15_000 });
    const acked = settled.filter((s) => s.action === 'acked').map((s) => s.messageId);
    expect(acked.sort()).toEqual(['d1', 'd2', 'd3', 'u1', 'u2', 'u3']);
    expect(settled.some((s) => s.action === 'dead-lettered')).toBe(false);
    const held = settled.filter((s) => s.action === 'held').map((s) => s.messageId);
    expect(held.length).toBeGreaterThan(0);
    expect(held.every((id) => id?.startsWith('d'))).toBe(true);
  });

  it('a final error counts as an answer: dead-lettered at once, the breaker stays closed', async () => {
    const events: ResilienceEvent[] = [];
    const { queue, settled } = await consume(
      async () => {
        throw markNonRetriable(new Error('the request is invalid'));
      },
      { breaker: { trip: { consecutiveFailures: 1 } }, onEvent: (e) => events.push(e) },
    );
    broker.send(queue, [
      { id: 'x', body: 'x' },
      { id: 'y', body: 'y' },
    ]);
    await broker.whenIdle({ timeoutMs: 10_000 });
    expect(settled.map((s) => s.action)).toEqual(['dead-lettered', 'dead-lettered']);
    expect(events).toEqual([]);
  });

  it('refuses a breaker that trips no earlier than the inbox dead-letters', () => {
    const inbox = createInbox({ store, consumer: 'resilience-check', maxAttempts: 3 });
    expect(() =>
      withResilience(inbox, { breaker: { trip: { consecutiveFailures: 3 } } }, 'consume'),
    ).toThrow(/consecutiveFailures \(3\) must be below the inbox's maxAttempts \(3\)/);
    expect(() => withResilience(inbox, {}, 'consume')).toThrow(/consecutiveFailures \(5\)/);
    expect(() =>
      withResilience(inbox, { breaker: { trip: { failureRatio: 0.5 } } }, 'consume'),
    ).not.toThrow();
    expect(() => withResilience(inbox, { breaker: false }, 'consume')).not.toThrow();
  });
});

describe('the resilience metrics', () => {
  it('count shed work and paid retries, and report breaker state and budget left', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    const clock = createManualClock(0);
    const gate = createResilienceGate<{ tenant: string }>(
      'orders',
      resolveResilience(
        {
          clock,
          budget: { ratio: 0, minRetriesPerSecond: 0.2, windowMs: 10_000 },
          breaker: { trip: { consecutiveFailures: 1 }, key: (m) => m.tenant },
        },
        'test',
      ),
      provider.getMeter('test'),
    );
    const a = gate.admit('a');
    if (!a.admitted) throw new Error('refused');
    gate.report(a, 'failure');
    gate.admit('a'); // refused: shed
    gate.admit('b');
    expect(gate.spend('b')).toBe(true);
    expect(gate.spend('b')).toBe(true);
    expect(gate.spend('b')).toBe(false);
    expect(await collect(reader)).toEqual({
      'justonce.resilience.shed{consumer=orders,key=a,reason=breaker-open}': 1,
      'justonce.resilience.shed{consumer=orders,key=b,reason=budget-spent}': 1,
      'justonce.resilience.budget.spent{consumer=orders}': 2,
      'justonce.resilience.breaker.state{consumer=orders,key=a}': 2,
      'justonce.resilience.breaker.state{consumer=orders,key=b}': 0,
      'justonce.resilience.budget.remaining{consumer=orders}': 0,
    });
    await provider.shutdown();
  });
});
