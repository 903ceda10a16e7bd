import { JustonceError } from '../errors/justonce-error';
import type { InboxOutcome } from '../inbox/types';
import {
  DEAD_LETTER_HEADERS,
  DEAD_LETTER_POSITION_HEADERS,
  deadLetterHeaders,
} from './dead-letter-facts';
import { consumerLifecycle, ConsumerStateError } from './lifecycle';
import { findMessageId, resolveMessageIdOptions } from './message-id';
import { decide, decideOnThrow } from './settle';

function recordingHooks(failStart = false) {
  const calls: string[] = [];
  return {
    calls,
    hooks: {
      start: async () => {
        calls.push('start');
        if (failStart) throw new Error('broker down');
      },
      stop: async (options: { drain: boolean; timeoutMs: number }) => {
        calls.push(`stop drain=${options.drain}`);
      },
    },
  };
}

describe('consumerLifecycle', () => {
  it('starts once; a second start and a start after stop throw ConsumerStateError', async () => {
    const { calls, hooks } = recordingHooks();
    const consumer = consumerLifecycle('test consumer', hooks);
    await consumer.start();
    expect(consumer.running).toBe(true);
    await expect(consumer.start()).rejects.toMatchObject({ code: 'CONSUMER_STATE' });
    await consumer.stop();
    expect(consumer.running).toBe(false);
    const error = await consumer.start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConsumerStateError);
    expect((error as Error).message).toMatch(/create a new one/);
    expect(calls).toEqual(['start', 'stop drain=true']);
  });

  it("writes the inbox's activity counts once the broker stopped, also when stopping failed", async () => {
    const { calls, hooks } = recordingHooks();
    const inbox = { flushActivity: async () => void calls.push('flush') };
    const consumer = consumerLifecycle('c', { ...hooks, inbox });
    await consumer.start();
    await consumer.stop();
    expect(calls).toEqual(['start', 'stop drain=true', 'flush']);

    const failing = consumerLifecycle('c', {
      ...hooks,
      stop: () => Promise.reject(new Error('channel gone')),
      inbox,
    });
    await failing.start();
    await expect(failing.stop()).rejects.toThrow('channel gone');
    expect(calls.filter((c) => c === 'flush')).toHaveLength(2);
  });

  it('stop twice is one stop; stop before start stops without calling the broker', async () => {
    const { calls, hooks } = recordingHooks();
    const consumer = consumerLifecycle('c', hooks);
    const first = consumer.stop();
    expect(consumer.stop()).toBe(first);
    await first;
    await expect(consumer.start()).rejects.toBeInstanceOf(ConsumerStateError);
    expect(calls).toEqual([]);
  });

  it('a stop during start waits for it, then stops; drain false is passed on', async () => {
    const { calls, hooks } = recordingHooks();
    const consumer = consumerLifecycle('c', hooks);
    const started = consumer.start();
    await consumer.stop({ drain: false });
    await started;
    expect(calls).toEqual(['start', 'stop drain=false']);
    expect(consumer.running).toBe(false);
  });

  it('a failed start stops what it opened and leaves the consumer stopped', async () => {
    const { calls, hooks } = recordingHooks(true);
    const consumer = consumerLifecycle('c', hooks);
    await expect(consumer.start()).rejects.toThrow('broker down');
    expect(calls).toEqual(['start', 'stop drain=false']);
    await expect(consumer.start()).rejects.toBeInstanceOf(ConsumerStateError);
  });
});

describe('decide: one table from outcome to action', () => {
  const where = { consumer: 'billing', source: 'orders' };
  const base = { messageId: 'm-1', scope: 'default' };

  it('acks processed and duplicate, redelivers failed after its delay', () => {
    const processed: InboxOutcome = { status: 'processed', ...base, attempt: 1, result: 1 };
    expect(decide(processed, where).kind).toBe('ack');
    expect(decide({ status: 'duplicate', ...base }, where).kind).toBe('ack');
    const failed: InboxOutcome = {
      status: 'failed',
      ...base,
      attempt: 2,
      retriable: true,
      error: new Error('x'),
      retryDelayMs: 750,
    };
    expect(decide(failed, where)).toMatchObject({ kind: 'redeliver', delayMs: 750 });
  });

  it('dead-letters with the shared facts and headers', () => {
    const error = new JustonceError('MAX_ATTEMPTS', 'gave up after 5 attempts');
    const decision = decide(
      {
        status: 'dead-lettered',
        ...base,
        attempt: 6,
        reason: 'MAX_ATTEMPTS',
        error,
        deadLetterId: '42',
      },
      where,
    );
    expect(decision.kind).toBe('dead-letter');
    if (decision.kind !== 'dead-letter') return;
    expect(decision.facts).toMatchObject({
      reason: 'MAX_ATTEMPTS',
      errorCode: 'MAX_ATTEMPTS',
      attempts: 6,
      messageId: 'm-1',
      consumer: 'billing',
      source: 'orders',
      deadLetterId: '42',
    });
    const headers = deadLetterHeaders(decision.facts);
    expect(headers[DEAD_LETTER_HEADERS.reason]).toBe('MAX_ATTEMPTS');
    expect(headers[DEAD_LETTER_HEADERS.attempts]).toBe('6');
    expect(new Date(headers[DEAD_LETTER_HEADERS.at] ?? '').getTime()).not.toBeNaN();
  });

  it("carries the outcome's broker position in the facts and as one header per field", () => {
    const position = { topic: 'orders', partition: 2, offset: '42' };
    const outcome: InboxOutcome = {
      status: 'dead-lettered',
      ...base,
      attempt: 0,
      reason: 'MISSING_MESSAGE_ID',
      error: new JustonceError('MISSING_MESSAGE_ID', 'no id'),
      deadLetterId: '7',
      position,
    };
    const decision = decide(outcome, where);
    if (decision.kind !== 'dead-letter') throw new Error(decision.kind);
    expect(decision.facts.position).toEqual(position);
    const headers = deadLetterHeaders(decision.facts);
    expect(headers).toMatchObject({
      [DEAD_LETTER_HEADERS.source]: 'orders',
      [DEAD_LETTER_POSITION_HEADERS.partition]: '2',
      [DEAD_LETTER_POSITION_HEADERS.offset]: '42',
    });
    expect(headers[DEAD_LETTER_POSITION_HEADERS.routingKey]).toBeUndefined();
    // The topic is the source's header, not a second one.
    expect(Object.keys(headers).filter((h) => h.endsWith('-topic'))).toEqual([]);
    // Without a position, no position header at all.
    const { position: _, ...without } = outcome;
    const plain = decide(without as InboxOutcome, where);
    if (plain.kind !== 'dead-letter') throw new Error(plain.kind);
    expect(plain.facts).not.toHaveProperty('position');
    const names = Object.values(DEAD_LETTER_POSITION_HEADERS) as string[];
    expect(Object.keys(deadLetterHeaders(plain.facts)).filter((h) => names.includes(h))).toEqual(
      [],
    );
  });

  it('holds on a store outage with a growing bounded delay; releases on anything else', () => {
    const outage = new JustonceError('STORE_UNAVAILABLE', 'the store is unavailable');
    for (const holds of [0, 3, 30]) {
      const decision = decideOnThrow(outage, { ...where, holds, holdBackoff: { capMs: 1_000 } });
      expect(decision.kind).toBe('hold');
      if (decision.kind === 'hold') expect(decision.delayMs).toBeLessThanOrEqual(1_000);
    }
    expect(decideOnThrow(new TypeError('bug'), where)).toMatchObject({ kind: 'release' });
    expect(decideOnThrow('a string', where)).toMatchObject({ kind: 'release' });
  });
});

describe('findMessageId', () => {
  const options = resolveMessageIdOptions<{ body: string }>({
    extract: (m) =>
      m.body === 'boom'
        ? (() => {
            throw new Error('bad');
          })()
        : m.body || undefined,
  });
  const none = () => undefined;

  it('header first (any case), then extract, then the broker id', () => {
    expect(findMessageId({ body: 'b' }, { 'Message-Id': 'h' }, options, () => 'x', none)).toBe('h');
    expect(findMessageId({ body: 'b' }, {}, options, () => 'x', none)).toBe('b');
    expect(findMessageId({ body: '' }, {}, options, () => 'x', none)).toBe('x');
    const noFallback = { ...options, fallback: false };
    expect(findMessageId({ body: '' }, {}, noFallback, () => 'x', none)).toBeUndefined();
  });

  it('a throwing extract counts as no id and is reported; a throwing report changes nothing', () => {
    const reported: unknown[] = [];
    expect(
      findMessageId(
        { body: 'boom' },
        {},
        options,
        () => 'x',
        (e) => reported.push(e),
      ),
    ).toBeUndefined();
    expect(reported).toHaveLength(1);
    const throwing = () => {
      throw new Error('logger down');
    };
    expect(findMessageId({ body: 'boom' }, {}, options, () => 'x', throwing)).toBeUndefined();
  });
});
