import type { InboxOutcome } from '../src/inbox/types';
import type { Envelope } from '../src/transport/envelope';
import {
  BrokerClosedError,
  CRASH_POINTS,
  IdleTimeoutError,
  SimulatedCrashError,
  createMemoryBroker,
  isSimulatedCrash,
  seededRandom,
  type ConsumeOptions,
  type DeliveryProcessor,
  type MemoryBroker,
  type MemoryConsumer,
  type MemoryMessage,
} from '../src/testing';
import { JustonceError, hasErrorCode } from '../src/errors';
import type { Inbox } from '../src/inbox/types';
import { DEAD_LETTER_HEADERS, type SettledEvent } from '../src/consumer';

/**
 * These tests drive the broker with scripted processors that return inbox outcomes directly,
 * so the transport's own contract is checked apart from any inbox.
 */

function processed(envelope: Envelope): InboxOutcome {
  return {
    status: 'processed',
    messageId: envelope.id ?? '',
    scope: 'default',
    attempt: envelope.delivery.attempt ?? 1,
    result: undefined,
  };
}

function failed(envelope: Envelope, retryDelayMs = 1): InboxOutcome {
  return {
    status: 'failed',
    messageId: envelope.id ?? '',
    scope: 'default',
    attempt: envelope.delivery.attempt ?? 1,
    retriable: true,
    error: new Error('boom'),
    retryDelayMs,
  };
}

/** A processor that remembers every envelope it saw and processes it. */
function recorder(): { seen: Envelope[]; process: DeliveryProcessor } {
  const seen: Envelope[] = [];
  return {
    seen,
    process: async (envelope) => {
      seen.push(envelope);
      return processed(envelope);
    },
  };
}

const brokers: MemoryBroker[] = [];
function broker(...args: Parameters<typeof createMemoryBroker>): MemoryBroker {
  const b = createMemoryBroker(...args);
  brokers.push(b);
  return b;
}

/** A started consumer: the broker's `start` registers it at once, before its promise settles. */
function consume<R>(b: MemoryBroker, queue: string, options: ConsumeOptions<R>): MemoryConsumer {
  const consumer = b.consume(queue, options);
  void consumer.start();
  return consumer;
}

afterEach(async () => {
  await Promise.all(brokers.splice(0).map((b) => b.close()));
});

describe('memory broker: delivery', () => {
  it('delivers each message once when nothing goes wrong, with delivery facts filled', async () => {
    const b = broker();
    const { seen, process } = recorder();
    consume(b, 'q', { process, concurrency: 3 });
    b.send('q', [
      { id: 'a', body: 'A', headers: { tenant: 't1' }, key: 'k' },
      { id: 'b', body: new Uint8Array([1, 2]) },
    ]);
    await b.whenIdle({ timeoutMs: 2_000 });

    expect(seen.map((e) => e.id).sort()).toEqual(['a', 'b']);
    const a = seen.find((e) => e.id === 'a') as Envelope;
    expect(a.headers['message-id']).toBe('a');
    expect(a.scope).toBe('t1');
    expect(a.key).toBe('k');
    expect(a.body).toBe('A');
    expect(a.delivery).toMatchObject({
      attempt: 1,
      receiveCount: 1,
      redelivered: false,
      source: 'q',
    });
    expect(a.delivery.receivedAt).toBeInstanceOf(Date);
    expect(b.stats('q')).toMatchObject({ published: 2, deliveries: 2, acked: 2, processed: 2 });
    expect(b.log.map((r) => r.result)).toEqual(['processed', 'processed']);
  });

  it('never runs more deliveries at once than the concurrency allows', async () => {
    const b = broker();
    let running = 0;
    let peak = 0;
    consume(b, 'q', {
      concurrency: 3,
      process: async (envelope) => {
        running += 1;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setImmediate(resolve));
        running -= 1;
        return processed(envelope);
      },
    });
    b.send(
      'q',
      Array.from({ length: 20 }, (_, i) => ({ id: `m${i}`, body: '' })),
    );
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(peak).toBe(3);
    expect(b.stats().processed).toBe(20);
  });

  it('redelivers a failed message after the retry delay, with growing attempt facts', async () => {
    const b = broker();
    const attempts: (number | undefined)[] = [];
    consume(b, 'q', {
      process: async (envelope) => {
        attempts.push(envelope.delivery.attempt);
        expect(envelope.delivery.redelivered).toBe(attempts.length > 1);
        return attempts.length < 3 ? failed(envelope, 2) : processed(envelope);
      },
    });
    b.send('q', { id: 'x', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(attempts).toEqual([1, 2, 3]);
    expect(b.log.map((r) => [r.result, r.acked])).toEqual([
      ['failed', false],
      ['failed', false],
      ['processed', true],
    ]);
    expect(b.log[0]?.redeliveryDelayMs).toBe(2);
  });

  it('cuts long retry delays to maxRetryDelayMs', async () => {
    const b = broker({ maxRetryDelayMs: 3 });
    let calls = 0;
    consume(b, 'q', {
      process: async (envelope) => (++calls === 1 ? failed(envelope, 60_000) : processed(envelope)),
    });
    b.send('q', { id: 'x', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(b.log[0]?.redeliveryDelayMs).toBe(3);
    expect(calls).toBe(2);
  });

  it('moves dead-lettered messages to the queue dead-letter list and acknowledges them', async () => {
    const b = broker();
    consume(b, 'q', {
      process: async (envelope) => ({
        status: 'dead-lettered',
        messageId: envelope.id,
        scope: 'default',
        attempt: 1,
        reason: 'MAX_ATTEMPTS',
        error: new Error('poison'),
        deadLetterId: 'dl-1',
      }),
    });
    b.send('q', { id: 'p', body: 'x' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(b.deadLetters('q')).toEqual([
      expect.objectContaining({ reason: 'MAX_ATTEMPTS', deadLetterId: 'dl-1', receiveCount: 1 }),
    ]);
    expect(b.deadLetters('q')[0]?.message.id).toBe('p');
    expect(b.stats('q')).toMatchObject({ deadLettered: 1, acked: 1, ready: 0 });
  });

  it('treats a throwing consumer as a crash and redelivers', async () => {
    const b = broker({ crashRedeliveryDelayMs: 1 });
    let calls = 0;
    consume(b, 'q', {
      process: async (envelope) => {
        calls += 1;
        if (calls === 1) throw new Error('process died');
        return processed(envelope);
      },
    });
    b.send('q', { id: 'c', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(b.log.map((r) => r.result)).toEqual(['crashed', 'processed']);
    expect(b.log[0]?.error?.message).toBe('process died');
    expect(b.log[1]?.receiveCount).toBe(2);
  });

  it('redrives a message that reached maxReceiveCount to the dead-letter list', async () => {
    const b = broker({ maxReceiveCount: 3 });
    let calls = 0;
    consume(b, 'q', {
      process: async (envelope) => {
        calls += 1;
        return failed(envelope, 0);
      },
    });
    b.send('q', { id: 'stuck', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(calls).toBe(3);
    expect(b.deadLetters('q').map((d) => d.reason)).toEqual(['MAX_RECEIVE_COUNT']);
    expect(b.stats('q').redriven).toBe(1);
  });

  it('competing consumers of one queue share its messages', async () => {
    const b = broker();
    const first = recorder();
    const second = recorder();
    consume(b, 'q', { process: first.process });
    consume(b, 'q', { process: second.process });
    b.send(
      'q',
      Array.from({ length: 10 }, (_, i) => ({ id: `m${i}`, body: '' })),
    );
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(first.seen.length + second.seen.length).toBe(10);
    expect(first.seen.length).toBeGreaterThan(0);
    expect(second.seen.length).toBeGreaterThan(0);
  });

  it('keeps messages of a queue nobody consumes, and is idle meanwhile', async () => {
    const b = broker();
    b.send('later', { id: 'm', body: '' });
    await b.whenIdle({ timeoutMs: 100 });
    expect(b.stats('later').ready).toBe(1);
    const { seen, process } = recorder();
    consume(b, 'later', { process });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(seen.map((e) => e.id)).toEqual(['m']);
  });

  it('stop() waits for running deliveries and leaves the rest queued', async () => {
    const b = broker();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const consumer = consume(b, 'q', {
      process: async (envelope) => {
        await gate;
        return processed(envelope);
      },
    });
    b.send('q', [
      { id: 'a', body: '' },
      { id: 'b', body: '' },
    ]);
    const stopped = consumer.stop();
    release();
    await stopped;
    expect(b.stats('q')).toMatchObject({ processed: 1, ready: 1, inFlight: 0 });
  });
});

describe('memory broker: the consumer skeleton', () => {
  it('consume returns a stopped consumer: nothing is delivered before start', async () => {
    const b = broker();
    const { seen, process } = recorder();
    const consumer = b.consume('q', { process });
    b.send('q', { id: 'm', body: '' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toHaveLength(0);
    expect(consumer.running).toBe(false);
    await consumer.start();
    expect(consumer.running).toBe(true);
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(seen.map((e) => e.id)).toEqual(['m']);
    await expect(consumer.start()).rejects.toMatchObject({ code: 'CONSUMER_STATE' });
  });

  it('reports every settlement through onSettled with the shared actions', async () => {
    const b = broker();
    const events: SettledEvent<unknown, MemoryMessage>[] = [];
    let calls = 0;
    consume(b, 'q', {
      onSettled: (event) => events.push(event),
      process: async (envelope) => (++calls === 1 ? failed(envelope, 1) : processed(envelope)),
    });
    b.send('q', { id: 'm', body: 'x' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(events.map((e) => [e.action, e.messageId, e.message.body])).toEqual([
      ['redelivered', 'm', 'x'],
      ['acked', 'm', 'x'],
    ]);
    expect(events[0]?.delayMs).toBe(1);
  });

  it('forwards dead letters with the original headers and the shared facts', async () => {
    const b = broker();
    const events: SettledEvent<unknown, MemoryMessage>[] = [];
    consume(b, 'q', {
      onSettled: (event) => events.push(event),
      process: async (envelope) => ({
        status: 'dead-lettered',
        messageId: envelope.id,
        scope: 'default',
        attempt: 3,
        reason: 'MAX_ATTEMPTS',
        error: new Error('gave up'),
        deadLetterId: '7',
      }),
    });
    b.send('q', { id: 'm', body: '', headers: { 'x-own': 'kept' } });
    await b.whenIdle({ timeoutMs: 2_000 });
    const [letter] = b.deadLetters('q');
    expect(letter?.message.headers).toMatchObject({
      'x-own': 'kept',
      [DEAD_LETTER_HEADERS.reason]: 'MAX_ATTEMPTS',
      [DEAD_LETTER_HEADERS.attempts]: '3',
      [DEAD_LETTER_HEADERS.source]: 'q',
      [DEAD_LETTER_HEADERS.deadLetterId]: '7',
    });
    expect(events.map((e) => e.action)).toEqual(['dead-lettered']);
    expect(events[0]?.deadLetter).toMatchObject({ reason: 'MAX_ATTEMPTS', consumer: 'q' });
  });

  it('holds a delivery while the store is down, uncharged, and acks it once it is back', async () => {
    const b = broker();
    const events: string[] = [];
    let calls = 0;
    consume(b, 'q', {
      onSettled: (event) => events.push(event.action),
      process: async (envelope) => {
        calls += 1;
        if (calls <= 2) throw new JustonceError('STORE_UNAVAILABLE', 'the store is down');
        return processed(envelope);
      },
    });
    b.send('q', { id: 'm', body: '' });
    await b.whenIdle({ timeoutMs: 5_000 });
    expect(events).toEqual(['held', 'held', 'acked']);
    // Held in flight: one receive, not three.
    expect(b.stats('q')).toMatchObject({ deliveries: 1, acked: 1, crashed: 0 });
  });

  it('stop without drain gives in-flight deliveries back and aborts their signal', async () => {
    const b = broker();
    const events: string[] = [];
    let signal: AbortSignal | undefined;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const inbox = {
      consumer: 'c',
      process: async (
        envelope: Envelope,
        _handler: unknown,
        options?: { signal?: AbortSignal },
      ) => {
        signal = options?.signal;
        await gate;
        return processed(envelope);
      },
      processBatch: async () => [],
    } as unknown as Inbox;
    const consumer = consume(b, 'q', {
      inbox,
      handler: async () => undefined,
      onSettled: (event) => events.push(event.action),
    });
    b.send('q', { id: 'm', body: '' });
    await new Promise((resolve) => setImmediate(resolve));
    const stopped = consumer.stop({ drain: false });
    await new Promise((resolve) => setImmediate(resolve));
    // Read before the release: stop waits for the handler's run, which waits for the gate.
    const aborted = signal?.aborted;
    release();
    await stopped;
    expect(aborted).toBe(true);
    expect(events).toEqual(['released']);
    expect(b.stats('q')).toMatchObject({ released: 1, acked: 0, ready: 1 });
  });

  it('finds the message id by the shared rules: header, extract, then the broker id', async () => {
    const b = broker();
    const { seen, process } = recorder();
    consume(b, 'q', {
      process,
      messageId: { extract: (m) => (m.body === 'json' ? 'from-body' : undefined) },
    });
    b.send('q', [
      { id: 'own', body: 'json' },
      { id: undefined, body: 'json' },
      { id: undefined, body: 'plain' },
      { id: undefined, body: 'plain', headers: { 'Message-Id': 'from-header' } },
    ]);
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(seen.map((e) => e.id).sort()).toEqual(['from-body', 'from-header', 'own', 'q#3']);
  });

  it('refuses unknown consume options and a misspelt messageId option', () => {
    const b = broker();
    const { process } = recorder();
    const loose = (o: object) => o as ConsumeOptions;
    expect(() => b.consume('q', loose({ process, concurency: 2 }))).toThrow(/concurency/);
    expect(() => b.consume('q', loose({ process, messageId: { fallbak: false } }))).toThrow(
      /fallbak/,
    );
  });
});

describe('memory broker: publisher', () => {
  it('publishes relay messages into queues with their id and headers', async () => {
    const b = broker();
    const { seen, process } = recorder();
    consume(b, 'events', { process });
    const publisher = b.publisher();
    const results = await publisher.publish([
      {
        messageId: 'e-1',
        destination: 'events',
        key: 'acct-1',
        headers: { 'causation-id': 'c-1', tenant: 'acme' },
        payload: new TextEncoder().encode('{"x":1}'),
      },
    ]);
    expect(results).toEqual([{ messageId: 'e-1', ok: true }]);
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(seen[0]).toMatchObject({
      id: 'e-1',
      key: 'acct-1',
      scope: 'acme',
      headers: { 'message-id': 'e-1', 'causation-id': 'c-1', tenant: 'acme' },
    });
    await publisher.close();
    await publisher.close();
    await expect(publisher.publish([])).rejects.toBeInstanceOf(BrokerClosedError);
  });
});

describe('memory broker: fault injection', () => {
  it('delivers an explicit duplicate after the first acknowledgement', async () => {
    const b = broker();
    const { seen, process } = recorder();
    b.faults.duplicate('d', 2);
    consume(b, 'q', { process });
    b.send('q', { id: 'd', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(seen.map((e) => e.delivery.receiveCount)).toEqual([1, 2, 3]);
    expect(b.log.map((r) => r.kind)).toEqual(['original', 'duplicate', 'duplicate']);
    expect(b.injected().duplicates).toBe(2);
  });

  it('delivers a duplicate at once when the message was already acknowledged', async () => {
    const b = broker();
    const { seen, process } = recorder();
    consume(b, 'q', { process });
    b.send('q', { id: 'd', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    b.faults.duplicate('d');
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(seen.map((e) => e.id)).toEqual(['d', 'd']);
  });

  it('hands a concurrent delivery to two handlers at the same time', async () => {
    const b = broker();
    let running = 0;
    let peak = 0;
    b.faults.concurrent('c');
    consume(b, 'q', {
      concurrency: 1,
      process: async (envelope) => {
        running += 1;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running -= 1;
        return processed(envelope);
      },
    });
    b.send('q', { id: 'c', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(peak).toBe(2);
    expect(b.log.map((r) => r.kind).sort()).toEqual(['concurrent', 'original']);
    expect(b.injected().concurrent).toBe(1);
  });

  it('crashes at an inbox step through onStep, then redelivers', async () => {
    const b = broker({ crashRedeliveryDelayMs: 1 });
    const steps: string[] = [];
    b.faults.crash('handler-done', 'm', 2);
    consume(b, 'q', {
      // Plays the part of an inbox that calls its onStep hook and lets the throw escape.
      process: async (envelope) => {
        for (const step of ['received', 'attempt-counted', 'handler-done', 'committed'] as const) {
          b.onStep(step, envelope.id ?? '');
          steps.push(step);
        }
        return processed(envelope);
      },
    });
    b.send('q', { id: 'm', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(b.log.map((r) => [r.result, r.crashPoint])).toEqual([
      ['crashed', 'handler-done'],
      ['crashed', 'handler-done'],
      ['processed', undefined],
    ]);
    expect(isSimulatedCrash(b.log[0]?.error)).toBe(true);
    expect(steps.filter((s) => s === 'committed')).toHaveLength(1);
    expect(b.injected().crashes['handler-done']).toBe(2);
  });

  it('treats a failed outcome caused by a simulated crash as a crash', async () => {
    const b = broker({ crashRedeliveryDelayMs: 1 });
    b.faults.crash('received', 'm');
    consume(b, 'q', {
      // Plays the part of an inbox that reports an onStep throw as a failed outcome.
      process: async (envelope) => {
        try {
          b.onStep('received', envelope.id ?? '');
        } catch (error) {
          return { ...failed(envelope, 60_000), error: error as Error };
        }
        return processed(envelope);
      },
    });
    b.send('q', { id: 'm', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(b.log.map((r) => [r.result, r.crashPoint, r.redeliveryDelayMs])).toEqual([
      ['crashed', 'received', 1],
      ['processed', undefined, undefined],
    ]);
  });

  it('skips the acknowledgement at after-commit-before-ack, and redelivers', async () => {
    const b = broker({ crashRedeliveryDelayMs: 1 });
    const { seen, process } = recorder();
    b.faults.crash('after-commit-before-ack', 'm');
    consume(b, 'q', { process });
    b.send('q', { id: 'm', body: '' });
    await b.whenIdle({ timeoutMs: 2_000 });
    expect(seen).toHaveLength(2);
    expect(b.log.map((r) => [r.result, r.acked, r.crashPoint])).toEqual([
      ['crashed', false, 'after-commit-before-ack'],
      ['processed', true, undefined],
    ]);
    expect(b.log[0]?.outcome?.status).toBe('processed');
  });

  it('injects faults at random reproducibly from the seed', async () => {
    const run = async (seed: number): Promise<string[]> => {
      const b = broker({
        seed,
        faults: { duplicateRate: 0.3, concurrentRate: 0.2, crashRate: 0.2 },
        crashRedeliveryDelayMs: 0,
      });
      consume(b, 'q', { concurrency: 1, process: recorder().process });
      b.send(
        'q',
        Array.from({ length: 50 }, (_, i) => ({ id: `m${i}`, body: '' })),
      );
      await b.whenIdle({ timeoutMs: 5_000 });
      const injected = b.injected();
      expect(injected.duplicates).toBeGreaterThan(0);
      expect(injected.concurrent).toBeGreaterThan(0);
      expect(injected.crashes['after-commit-before-ack']).toBeGreaterThan(0);
      return b.log.map((r) => `${r.messageId}:${r.kind}:${r.result}`);
    };
    const first = await run(42);
    expect(await run(42)).toEqual(first);
    expect(await run(43)).not.toEqual(first);
  });

  it('lists every crash point in delivery order', () => {
    expect(CRASH_POINTS).toEqual([
      'received',
      'attempt-counted',
      'handler-done',
      'committed',
      'after-commit-before-ack',
    ]);
  });
});

describe('memory broker: idle, close and configuration', () => {
  it('whenIdle rejects with IdleTimeoutError while a delivery hangs', async () => {
    const b = broker();
    let release: () => void = () => undefined;
    consume(b, 'q', {
      process: (envelope) =>
        new Promise<InboxOutcome>((resolve) => {
          release = () => resolve(processed(envelope));
        }),
    });
    b.send('q', { id: 'h', body: '' });
    const error = await b.whenIdle({ timeoutMs: 30 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdleTimeoutError);
    expect(hasErrorCode(error, 'IDLE_TIMEOUT')).toBe(true);
    expect((error as IdleTimeoutError).details).toMatchObject({ inFlight: 1 });
    release();
    await b.whenIdle({ timeoutMs: 2_000 });
  });

  it('close() drops pending redeliveries and refuses further use', async () => {
    const b = broker();
    consume(b, 'q', { process: async (envelope) => failed(envelope, 60_000) });
    b.send('q', { id: 'x', body: '' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(b.stats('q').scheduled).toBe(1);
    await b.close();
    await b.close();
    expect(b.stats('q').scheduled).toBe(0);
    expect(() => b.send('q', { id: 'y', body: '' })).toThrow(BrokerClosedError);
    expect(() => b.consume('q', { process: recorder().process })).toThrow(BrokerClosedError);
  });

  it('rejects invalid configuration at construction', () => {
    expect(() => createMemoryBroker({ faults: { duplicateRate: 2 } })).toThrow(/duplicateRate/);
    expect(() => createMemoryBroker({ crashRedeliveryDelayMs: -1 })).toThrow(
      /crashRedeliveryDelayMs/,
    );
    expect(() => createMemoryBroker({ maxReceiveCount: 0 })).toThrow(/maxReceiveCount/);
    expect(() => createMemoryBroker({ seed: 1.5 })).toThrow(/seed/);
    const b = broker();
    expect(() => b.consume('', { process: recorder().process })).toThrow(/queue name/);
    expect(() => b.consume('q', { process: recorder().process, concurrency: 0 })).toThrow(
      /concurrency/,
    );
    expect(() => b.faults.crash('nowhere' as 'received', 'm')).toThrow(/unknown crash point/);
    expect(() => b.faults.duplicate('m', 0)).toThrow(/count/);
  });

  it('simulated crashes are typed, retriable justonce errors', () => {
    const error = new SimulatedCrashError('committed', 'm-1');
    expect(hasErrorCode(error, 'SIMULATED_CRASH')).toBe(true);
    expect(error.retriable).toBe(true);
    expect(error.point).toBe('committed');
  });

  it('the seeded random source repeats for a seed and stays in [0, 1)', () => {
    const a = seededRandom(9);
    const b = seededRandom(9);
    const xs = Array.from({ length: 100 }, () => a());
    expect(Array.from({ length: 100 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });
});
