import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  createInbox,
  createMemoryPublisher,
  createOutbox,
  createRelay,
  rowsOf,
  type Envelope,
  type Inbox,
  type Outbox,
} from '../src';
import { openTestStore } from './db';
import { freshId } from './fixtures/inbox-support';
import {
  installTracing,
  linkedTo,
  parentOf,
  type TestTracing,
} from '../../../test-support/tracing';

/**
 * The spans of the outbox, the relay and the inbox (docs/observability.md) on an SDK with an
 * in-memory exporter, on PostgreSQL and the in-memory publisher: names, kinds, parents, links and
 * attributes of the messaging conventions, one trace from the caller's span to the consumer's.
 * The same across real brokers: traces-order-service.test.ts.
 */

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const MEMORY = { system: 'justonce_memory' } as const;

let tracing: TestTracing;
let store: TestStore;
let outbox: Outbox;
let inbox: Inbox;

beforeAll(async () => {
  tracing = installTracing();
  store = await openTestStore('postgres');
  outbox = createOutbox({ store });
  inbox = createInbox({ store, consumer: 'billing', outbox, maxAttempts: 3 });
});
afterAll(async () => {
  await store.dispose();
  await tracing.uninstall();
});
beforeEach(() => tracing.exporter.reset());

function only(name: string): ReadableSpan {
  const found = tracing.spans().filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0] as ReadableSpan;
}

/** Adds one event inside a span standing for the caller's request; returns both. */
async function addInRequest(destination: string): Promise<{ request: ReadableSpan; id: string }> {
  const { id, spanId } = await trace
    .getTracer('test')
    .startActiveSpan('POST /orders', async (span) => {
      const [added] = await store.knex.transaction((trx) =>
        outbox.add(trx, { destination, key: destination, payload: { n: 1 } }),
      );
      span.end();
      return { id: added as string, spanId: span.spanContext().spanId };
    });
  const request = tracing.spans().find((s) => s.spanContext().spanId === spanId);
  return { request: request as ReadableSpan, id };
}

async function storedHeaders(id: string): Promise<Record<string, string>> {
  const result = await store.knex.raw(
    `select headers from ${store.names.table('outbox')} where message_id = ?`,
    [id],
  );
  const [row] = rowsOf<{ headers: Record<string, string> | string }>(result);
  const headers = row?.headers ?? {};
  return typeof headers === 'string' ? (JSON.parse(headers) as Record<string, string>) : headers;
}

/** Publishes what is pending through a memory publisher; the messages as envelopes. */
async function relayed(destination: string): Promise<Envelope[]> {
  const publisher = createMemoryPublisher();
  await createRelay({ store, publisher }).runOnce();
  return publisher.published
    .filter((m) => m.destination === destination)
    .map((m) => ({
      id: m.messageId,
      headers: m.headers,
      body: m.payload,
      delivery: { source: m.destination },
    }));
}

describe('traces of the outbox, the relay and the inbox', () => {
  it('create is a PRODUCER child of the caller; its context is the stored traceparent', async () => {
    const destination = freshId('orders');
    const { request, id } = await addInRequest(destination);
    const create = only(`create ${destination}`);
    expect(create.kind).toBe(SpanKind.PRODUCER);
    expect(create.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(parentOf(create)).toBe(request.spanContext().spanId);
    expect(create.attributes).toMatchObject({
      'messaging.operation.type': 'create',
      'messaging.operation.name': 'add',
      'messaging.destination.name': destination,
      'messaging.message.id': id,
    });
    const headers = await storedHeaders(id);
    expect(headers.traceparent).toContain(create.spanContext().spanId);
    expect(headers.traceparent).toContain(create.spanContext().traceId);
  });

  it('send is a PRODUCER child of the create context, linked to it, one per message', async () => {
    const destination = freshId('orders');
    const { id } = await addInRequest(destination);
    const create = only(`create ${destination}`);
    const [message] = await relayed(destination);
    expect(message?.headers.traceparent).toContain(create.spanContext().spanId);
    const send = only(`send ${destination}`);
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(parentOf(send)).toBe(create.spanContext().spanId);
    expect(linkedTo(send).map((c) => c.spanId)).toEqual([create.spanContext().spanId]);
    expect(send.attributes).toMatchObject({
      'messaging.system': 'justonce_memory',
      'messaging.operation.type': 'send',
      'messaging.message.id': id,
    });
  });

  it('process is a CONSUMER child of the create context; what the handler adds is its child', async () => {
    const destination = freshId('orders');
    const { request } = await addInRequest(destination);
    const create = only(`create ${destination}`);
    const [message] = await relayed(destination);
    const next = freshId('invoices');
    const outcome = await inbox.process(
      message as Envelope,
      async (ctx) => {
        await ctx.outbox.add({ destination: next, payload: { invoice: 1 } });
      },
      { messaging: { ...MEMORY, consumerGroup: 'billing-group' } },
    );
    expect(outcome.status).toBe('processed');
    const process = only(`process ${destination}`);
    expect(process.kind).toBe(SpanKind.CONSUMER);
    expect(process.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(parentOf(process)).toBe(create.spanContext().spanId);
    expect(linkedTo(process).map((c) => c.spanId)).toEqual([create.spanContext().spanId]);
    expect(process.attributes).toMatchObject({
      'messaging.system': 'justonce_memory',
      'messaging.operation.type': 'process',
      'messaging.destination.name': destination,
      'messaging.message.id': message?.id,
      'messaging.consumer.group.name': 'billing-group',
      'justonce.consumer': 'billing',
      'justonce.inbox.outcome': 'processed',
    });
    expect(process.status.code).toBe(SpanStatusCode.UNSET);
    const downstream = only(`create ${next}`);
    expect(parentOf(downstream)).toBe(process.spanContext().spanId);
    expect(downstream.spanContext().traceId).toBe(request.spanContext().traceId);
  });

  it('a duplicate is marked, not an error; a handler failure is an error with its exception', async () => {
    const destination = freshId('orders');
    await addInRequest(destination);
    const [message] = await relayed(destination);
    const envelope = message as Envelope;
    await inbox.process(envelope, async () => undefined, { messaging: MEMORY });
    tracing.exporter.reset();
    expect((await inbox.process(envelope, async () => undefined)).status).toBe('duplicate');
    const duplicate = only(`process ${destination}`);
    expect(duplicate.attributes).toMatchObject({
      'justonce.inbox.outcome': 'duplicate',
      'justonce.inbox.duplicate': true,
    });
    expect(duplicate.status.code).toBe(SpanStatusCode.UNSET);

    tracing.exporter.reset();
    const other = { ...envelope, id: freshId('failing') };
    const failed = await inbox.process(other, async () => {
      throw new Error('card declined');
    });
    expect(failed.status).toBe('failed');
    const failure = only(`process ${destination}`);
    expect(failure.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'card declined' });
    expect(failure.events.map((e) => e.name)).toEqual(['exception']);
    expect(failure.attributes['justonce.inbox.outcome']).toBe('failed');
  });

  it('a batch is one process span linked to each message, and one per message under its own', async () => {
    const destination = freshId('orders');
    const first = await addInRequest(destination);
    const second = await addInRequest(destination);
    expect(second.request.spanContext().traceId).not.toBe(first.request.spanContext().traceId);
    const creates = tracing.spans().filter((s) => s.name === `create ${destination}`);
    const envelopes = await relayed(destination);
    expect(envelopes).toHaveLength(2);
    tracing.exporter.reset();
    const next = freshId('invoices');
    const outcomes = await inbox.processBatch(
      envelopes,
      async (ctx) => {
        await ctx.outbox.add({ destination: next, payload: { of: ctx.messageId } });
      },
      { messaging: MEMORY },
    );
    expect(outcomes.map((o) => o.status)).toEqual(['processed', 'processed']);
    const processes = tracing.spans().filter((s) => s.name === `process ${destination}`);
    const batch = processes.find((s) => s.attributes['messaging.batch.message_count'] === 2);
    expect(batch?.kind).toBe(SpanKind.CONSUMER);
    expect(linkedTo(batch!).map((c) => c.spanId)).toEqual(
      creates.map((c) => c.spanContext().spanId),
    );
    const perMessage = processes.filter((s) => s !== batch);
    expect(perMessage.map(parentOf).sort()).toEqual(
      creates.map((c) => c.spanContext().spanId).sort(),
    );
    for (const span of perMessage) {
      expect(linkedTo(span).map((c) => c.spanId)).toContain(batch!.spanContext().spanId);
    }
    // Each handler's event is a child of its own message's span, in its message's trace.
    const downstream = tracing.spans().filter((s) => s.name === `create ${next}`);
    expect(downstream.map(parentOf).sort()).toEqual(
      perMessage.map((s) => s.spanContext().spanId).sort(),
    );
    expect(new Set(downstream.map((s) => s.spanContext().traceId))).toEqual(
      new Set([first, second].map((r) => r.request.spanContext().traceId)),
    );
  });

  it('a failed publish fails its send span', async () => {
    const destination = freshId('orders');
    await addInRequest(destination);
    const publisher = createMemoryPublisher();
    publisher.failWhen((m) => (m.destination === destination ? new Error('no route') : undefined));
    await createRelay({ store, publisher }).runOnce();
    const send = only(`send ${destination}`);
    expect(send.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'no route' });
    expect(send.attributes['justonce.relay.outage']).toBe(false);
  });

  it('refuses a malformed messaging option or publisher name before any work, with a typed error', async () => {
    const destination = freshId('orders');
    await addInRequest(destination);
    const [message] = await relayed(destination);
    let ran = false;
    const handler = async (): Promise<void> => {
      ran = true;
    };
    for (const messaging of [{ system: '' }, { system: 'kafka', group: 'g' }, 'kafka']) {
      await expect(
        inbox.process(message as Envelope, handler, {
          messaging: messaging as unknown as { system: string },
        }),
      ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    }
    expect(ran).toBe(false);
    const publisher = Object.assign(createMemoryPublisher(), { messagingSystem: 42 });
    expect(() =>
      createRelay({
        store,
        publisher: publisher as unknown as ReturnType<typeof createMemoryPublisher>,
      }),
    ).toThrow('publisher.messagingSystem must be a string or omitted');
  });
});
