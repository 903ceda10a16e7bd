import fc from 'fast-check';
import { z } from 'zod';
import {
  ConfigurationError,
  InvalidEventError,
  InvalidPayloadError,
  UnknownMessageTypeError,
  createDeadLetters,
  createInbox,
  createOutbox,
  defineMessage,
  messageHandler,
  on,
  rowsOf,
  type Envelope,
  type HandlerContext,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { freshId } from './fixtures/inbox-support';
import { zodOrder } from './fixtures/message-schemas';
import { anyText, fcRuns, writable } from '../../../test-support/fuzz';

/**
 * The boundary of typed messages against arbitrary input (fast-check; `FC_SEED` repeats a run,
 * `FC_RUNS` lengthens it): bad options are a `ConfigurationError`, never a `TypeError`; any
 * `type` header and any body either reach their route or are dead-lettered with
 * `INVALID_PAYLOAD` or `UNKNOWN_MESSAGE_TYPE`; any payload is either written or refused with
 * nothing written.
 */

const Order = defineMessage({ type: 'order.created', schema: zodOrder, destination: 'orders' });
const Cancelled = defineMessage({
  type: 'order.cancelled',
  schema: z.object({ orderId: z.string(), reasons: z.array(z.string()).max(3) }),
});
const TYPES = [Order.type, Cancelled.type];

const handler = messageHandler({
  routes: [
    on(Order, async (order) => order.orderId),
    on(Cancelled, async (cancelled) => cancelled.orderId),
  ],
});

/** A `type` header: a routed type, one near it, or any text at all. */
const typeHeader: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constantFrom(...TYPES),
  fc.constantFrom(undefined, '', 'ORDER.CREATED', 'order.created ', 'order'),
  anyText(40),
);

/** A body: a payload one of the schemas accepts, any JSON, or any bytes or text. */
const body: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc
    .record({ orderId: fc.string({ minLength: 1 }), total: fc.double({ min: 0.01, max: 1e6 }) })
    .map((order) => JSON.stringify(order)),
  fc
    .record({ orderId: fc.string(), reasons: fc.array(fc.string(), { maxLength: 4 }) })
    .map((cancelled) => JSON.stringify(cancelled)),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value) ?? 'null'),
  fc.uint8Array({ maxLength: 40 }),
  anyText(40),
);

/** A context with just what `messageHandler` reads; the rest would fail loudly if touched. */
function contextOf(type: string | undefined, payload: string | Uint8Array): HandlerContext {
  const message: Envelope = {
    id: 'm',
    headers: type === undefined ? {} : { type },
    body: payload,
    delivery: {},
  };
  return { message, payload } as unknown as HandlerContext;
}

describe('messageHandler against arbitrary deliveries, without a store', () => {
  it('routes, or throws InvalidPayloadError or UnknownMessageTypeError, and nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(typeHeader, body, async (type, payload) => {
        const outcome = await handler(contextOf(type, payload)).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        if (type === undefined || !TYPES.includes(type)) {
          expect('error' in outcome && outcome.error).toBeInstanceOf(UnknownMessageTypeError);
        } else if ('error' in outcome) {
          expect(outcome.error).toBeInstanceOf(InvalidPayloadError);
          const error = outcome.error as InvalidPayloadError;
          expect(error.messageType).toBe(type);
          expect(writable(error.message)).toBe(true);
          for (const issue of error.issues) expect(writable(issue.message)).toBe(true);
        } else {
          expect(typeof outcome.result).toBe('string');
        }
      }),
      { numRuns: fcRuns(500) },
    );
  });
});

describe('construction against arbitrary options', () => {
  const good = { type: 'order.created', schema: zodOrder, destination: 'orders' };
  const wrong: fc.Arbitrary<unknown> = fc.oneof(
    fc.anything({ maxDepth: 2 }),
    fc.constantFrom('', ' ', 'x'.repeat(201), '\u0000', '\ud800', '\ufeff', { '~standard': {} }),
    fc.constant({ '~standard': { validate: 'not a function' } }),
    fc.constant(Object.assign(() => undefined, { '~standard': null })),
  );
  /** Good options with one field spoilt, or an unknown key added. */
  const spoilt = fc.oneof(
    fc.record({
      field: fc.constantFrom('type', 'schema', 'destination', 'key'),
      value: wrong,
    }),
    fc.record({ field: fc.string().filter((k) => !(k in good) && k !== 'key'), value: wrong }),
  );

  /** What `run` threw: must be a ConfigurationError (so never a TypeError). */
  function refusal(run: () => unknown): unknown {
    try {
      run();
    } catch (error) {
      return error;
    }
    return undefined;
  }

  it('defineMessage refuses anything but options with a ConfigurationError', () => {
    fc.assert(
      fc.property(fc.anything({ maxDepth: 2 }), (options) => {
        expect(refusal(() => defineMessage(options as never))).toBeInstanceOf(ConfigurationError);
      }),
      { numRuns: fcRuns(300) },
    );
  });

  it('defineMessage refuses good options with one field spoilt with a ConfigurationError', () => {
    fc.assert(
      fc.property(spoilt, ({ field, value }) => {
        // `undefined` is a valid destination or key (the option left out).
        fc.pre(!(value === undefined && (field === 'destination' || field === 'key')));
        fc.pre(!(field === 'key' && typeof value === 'function'));
        // Text that happens to be a fine type or destination is no spoiler.
        if ((field === 'type' || field === 'destination') && typeof value === 'string') {
          fc.pre(
            value.trim() === '' ||
              (field === 'type' && value.length > 200) ||
              !writable(value) ||
              value.startsWith('\ufeff'),
          );
        }
        const options = Object.defineProperty({ ...good }, field, {
          value,
          enumerable: true,
        });
        expect(refusal(() => defineMessage(options))).toBeInstanceOf(ConfigurationError);
      }),
      { numRuns: fcRuns(300) },
    );
  });

  it('messageHandler refuses bad options with a ConfigurationError', () => {
    const routes = [on(Order, async () => undefined)];
    const options = fc.oneof(
      fc.anything({ maxDepth: 2 }),
      fc.record({ routes: fc.anything({ maxDepth: 1 }) }),
      fc.record({ routes: fc.constant(routes), unknownType: fc.anything({ maxDepth: 1 }) }),
      fc.record({ routes: fc.constant([...routes, ...routes]) }),
      fc.record({ routes: fc.constant(routes), unknowntype: fc.constant('acknowledge') }),
    );
    fc.assert(
      fc.property(options, (given) => {
        fc.pre(
          !(
            typeof given === 'object' &&
            given !== null &&
            'unknownType' in given &&
            given.unknownType === undefined
          ),
        );
        expect(refusal(() => messageHandler(given as never))).toBeInstanceOf(ConfigurationError);
      }),
      { numRuns: fcRuns(300) },
    );
  });
});

describe.each(ALL_STORE_KINDS)('typed messages against arbitrary input on %s', (kind) => {
  let store: Awaited<ReturnType<typeof openTestStore>>;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('an inbox running messageHandler processes or dead-letters with the two reasons', async () => {
    await fc.assert(
      fc.asyncProperty(typeHeader, body, async (type, payload) => {
        const inbox = createInbox({ store, consumer: freshId('fuzz') });
        const id = freshId('m');
        const sent: Envelope = {
          id,
          headers: type === undefined ? {} : { type },
          body: payload,
          delivery: {},
        };
        const outcome = await inbox.process(sent, handler);
        // A header or body the store cannot keep exactly is the inbox's bad input, before any
        // handler runs.
        const badInput =
          (type !== undefined && !writable(type)) ||
          (typeof payload === 'string' && /\p{Cs}/u.test(payload));
        if (outcome.status === 'processed') {
          expect(TYPES).toContain(type);
          return;
        }
        expect(outcome.status).toBe('dead-lettered');
        if (outcome.status !== 'dead-lettered') return;
        const expected = badInput
          ? ['INVALID_HEADERS', 'INVALID_BODY']
          : type !== undefined && TYPES.includes(type)
            ? ['INVALID_PAYLOAD']
            : ['UNKNOWN_MESSAGE_TYPE'];
        expect(expected).toContain(outcome.reason);
        const letter = await createDeadLetters(store).get(outcome.deadLetterId);
        expect(letter?.reason).toBe(outcome.reason);
        expect(letter?.errorCode).toBe(outcome.reason);
      }),
      { numRuns: fcRuns(kind === 'pglite' ? 40 : 80) },
    );
  });

  it('outbox.add either writes the payload it validated or refuses it and writes nothing', async () => {
    const outbox = createOutbox({ store });
    const payloads = fc.oneof(
      fc.record({ orderId: fc.string({ minLength: 1 }), total: fc.double({ min: 0.01 }) }),
      fc.anything({ maxDepth: 2 }),
      fc.jsonValue({ maxDepth: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(payloads, async (payload) => {
        const destination = freshId('fuzz');
        const message = defineMessage({ type: 'order.created', schema: zodOrder, destination });
        const result = await store.knex
          .transaction((trx) => outbox.add(trx, message, payload as never))
          .then(
            (id) => ({ id }),
            (error: unknown) => ({ error }),
          );
        const rows = rowsOf<{ payload: Uint8Array }>(
          await store.knex.raw(
            `select payload from ${store.names.table('outbox')} where destination = ?`,
            [destination],
          ),
        );
        if ('error' in result) {
          expect(result.error).toBeInstanceOf(InvalidEventError);
          expect(rows).toEqual([]);
          return;
        }
        expect(zodOrder.safeParse(payload).success).toBe(true);
        expect(rows.map((r) => JSON.parse(Buffer.from(r.payload).toString()))).toEqual([
          JSON.parse(JSON.stringify(payload)),
        ]);
      }),
      { numRuns: fcRuns(kind === 'pglite' ? 40 : 80) },
    );
  });
});
