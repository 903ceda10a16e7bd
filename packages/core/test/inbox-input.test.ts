/**
 * The inbox's input boundary, by property: whatever a transport or a plain-JavaScript caller
 * hands to `process` / `processBatch`, the call never throws a driver error or a TypeError;
 * usable messages take effect once, unusable ones end as dead letters that give back exactly
 * what was delivered, and no other message of a batch is lost or handled twice.
 */
import fc from 'fast-check';
import {
  createDeadLetters,
  createInbox,
  isJustonceError,
  type DeadLetterReason,
  type Envelope,
  type HandlerContext,
  type InboxOutcome,
} from '../src';
import { anyText, fcRuns, storable, writable } from '../../../test-support/fuzz';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { freshId } from './fixtures/inbox-support';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** An envelope-shaped object whose fields may each be of any type. */
interface LooseEnvelope {
  id: unknown;
  scope?: unknown;
  key?: unknown;
  headers: unknown;
  body: unknown;
  delivery: unknown;
}

/** Values of every kind, BigInt, boxed values, null-prototype objects and dates included. */
const ANYTHING = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withNullPrototype: true,
  withObjectString: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withTypedArray: true,
});

const idArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: anyText(40) },
  fc.constant(undefined),
  fc.constant(null),
  fc.constant(''),
  fc.integer(),
  fc.string({ minLength: 256, maxLength: 600 }),
  ANYTHING,
);
const headersArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(anyText(8), anyText(16), { maxKeys: 4 }) },
  fc.constant(undefined),
  fc.dictionary(fc.string({ maxLength: 6 }), ANYTHING, { maxKeys: 3 }),
  fc.array(anyText(4), { maxLength: 3 }),
  ANYTHING,
);
const bodyArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: anyText(64) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  fc.string({ minLength: 2000, maxLength: 70_000 }),
  ANYTHING,
);
const envelopeArb: fc.Arbitrary<LooseEnvelope> = fc.record(
  {
    id: idArb,
    scope: fc.oneof({ weight: 4, arbitrary: anyText(12) }, fc.constant(''), ANYTHING),
    key: fc.oneof(anyText(12), ANYTHING),
    headers: headersArb,
    body: bodyArb,
    delivery: fc.oneof(
      fc.constant({}),
      fc.record({ attempt: ANYTHING, source: ANYTHING, offset: ANYTHING }),
      ANYTHING,
    ),
  },
  { requiredKeys: ['id', 'headers', 'body', 'delivery'] },
);

/** What the inbox should conclude about an envelope: an independent statement of the rules. */
function expectedReason(e: LooseEnvelope): DeadLetterReason | undefined {
  if (e.id === undefined || e.id === null) return 'MISSING_MESSAGE_ID';
  if (typeof e.id !== 'string' || e.id === '' || Buffer.byteLength(e.id) > 255) {
    return 'INVALID_MESSAGE_ID';
  }
  if (!storable(e.id)) return 'INVALID_MESSAGE_ID';
  const scope = e.scope ?? 'default';
  if (typeof scope !== 'string' || scope === '' || Buffer.byteLength(scope) > 255) {
    return 'INVALID_SCOPE';
  }
  if (!storable(scope)) return 'INVALID_SCOPE';
  const h = e.headers;
  if (h !== undefined && h !== null) {
    if (typeof h !== 'object' || Array.isArray(h) || h instanceof Uint8Array) {
      return 'INVALID_HEADERS';
    }
    for (const [name, value] of Object.entries(h)) {
      if (typeof value !== 'string' || !writable(name) || !writable(value)) {
        return 'INVALID_HEADERS';
      }
    }
  }
  if (typeof e.body === 'string') {
    if (/\p{Cs}/u.test(e.body)) return 'INVALID_BODY';
  } else if (!(e.body instanceof Uint8Array)) {
    return 'INVALID_BODY';
  }
  // A transport that already counted more deliveries than `maxAttempts` (5 by default).
  const facts = (typeof e.delivery === 'object' && e.delivery !== null ? e.delivery : {}) as {
    attempt?: unknown;
    receiveCount?: unknown;
  };
  const counted = [facts.attempt, facts.receiveCount].some(
    (n) => typeof n === 'number' && Number.isFinite(n) && Math.floor(n) > 5,
  );
  return counted ? 'MAX_ATTEMPTS' : undefined;
}

/** `String(value)`, or the value's tag where that throws, as the inbox keeps an odd id. */
function text(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** JSON text of any value, falling back to its {@link text} as a JSON string. */
function json(value: unknown): string {
  try {
    const out = JSON.stringify(value);
    if (out !== undefined) return out;
  } catch {
    // below
  }
  return JSON.stringify(text(value));
}

function expectedHeaders(headers: unknown): Record<string, string> {
  if (typeof headers !== 'object' || headers === null) return {};
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [
      name,
      typeof value === 'string' ? value : json(value),
    ]),
  );
}

function sameBody(stored: Uint8Array | string, given: unknown): boolean {
  if (typeof given === 'string') return stored === given;
  if (given instanceof Uint8Array) {
    return stored instanceof Uint8Array && Buffer.from(stored).equals(Buffer.from(given));
  }
  return typeof stored === 'string';
}

describe.each(ALL_STORE_KINDS)('inbox input boundary on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const handler = async (ctx: HandlerContext) => {
    await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
  };

  /** Checks one settled outcome against the rules, and a dead letter against the input. */
  async function checkOutcome(
    consumer: string,
    given: LooseEnvelope,
    outcome: InboxOutcome<void>,
  ): Promise<void> {
    const reason = expectedReason(given);
    if (reason === undefined) {
      expect(outcome.status).toBe('processed');
      expect(
        await countEffects(store, given.id as string, {
          scope: (given.scope as string) ?? 'default',
        }),
      ).toBe(1);
      return;
    }
    expect(outcome).toMatchObject({ status: 'dead-lettered', reason });
    if (outcome.status !== 'dead-lettered') return;
    expect(isJustonceError(outcome.error)).toBe(true);
    const letter = await createDeadLetters(store).get(outcome.deadLetterId as string);
    expect(letter).toBeDefined();
    if (letter === undefined) return;
    expect(letter.consumer).toBe(consumer);
    expect(letter.reason).toBe(reason);
    expect(letter.messageId).toBe(
      given.id === undefined || given.id === null ? null : text(given.id),
    );
    if (typeof given.scope === 'string') expect(letter.scope).toBe(given.scope);
    if (typeof given.key === 'string') expect(letter.key).toBe(given.key);
    // Headers come back as given, a value that was not a string as its JSON text.
    expect(letter.headers).toEqual(expectedHeaders(given.headers));
    expect(sameBody(letter.body, given.body)).toBe(true);
  }

  it('process: any envelope object is handled once or dead-lettered exactly as given', async () => {
    await fc.assert(
      fc.asyncProperty(envelopeArb, async (sent) => {
        const consumer = freshId('fuzz');
        const inbox = createInbox({ store, consumer });
        // String ids are made unique per run, so effects are counted for this run alone.
        const given =
          typeof sent.id === 'string' ? { ...sent, id: `${consumer.slice(-12)}${sent.id}` } : sent;
        const outcome = await inbox.process(given as Envelope, handler);
        await checkOutcome(consumer, given, outcome);
        // A redelivery settles the same way, without a second effect or a throw.
        const again = await inbox.process(given as Envelope, handler);
        const reason = expectedReason(given);
        expect(again.status).toBe(reason === undefined ? 'duplicate' : 'dead-lettered');
        if (reason === undefined) {
          expect(
            await countEffects(store, given.id as string, {
              scope: (given.scope as string) ?? 'default',
            }),
          ).toBe(1);
        }
      }),
      { numRuns: fcRuns(kind === 'pglite' ? 60 : 120) },
    );
  });

  it('processBatch: bad records never stop or double the good ones beside them', async () => {
    const batchArb = fc.array(envelopeArb, { minLength: 1, maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(batchArb, async (batch) => {
        const consumer = freshId('fuzz-batch');
        const inbox = createInbox({ store, consumer });
        // String ids are made unique (per run and per position), so every usable record must
        // take effect exactly once; the rules are then applied to the ids as sent.
        const tag = consumer.slice(-12);
        const given = batch.map((e, i) =>
          typeof e.id === 'string' ? { ...e, id: `${tag}${i}-${e.id}` } : e,
        );
        const outcomes = await inbox.processBatch(given as Envelope[], handler);
        expect(outcomes).toHaveLength(given.length);
        for (const [i, outcome] of outcomes.entries()) {
          await checkOutcome(consumer, given[i] as LooseEnvelope, outcome);
        }
      }),
      { numRuns: fcRuns(kind === 'pglite' ? 30 : 60) },
    );
  });

  it('a value that is not an envelope object is a typed error before anything runs', async () => {
    const inbox = createInbox({ store, consumer: freshId('not-envelope') });
    const good: Envelope = { id: freshId(), headers: {}, body: 'x', delivery: {} };
    for (const value of [null, undefined, 42, 'text', [good]]) {
      await expect(inbox.process(value as unknown as Envelope, handler)).rejects.toMatchObject({
        code: 'INVALID_ENVELOPE',
      });
    }
    await expect(
      inbox.processBatch([good, null] as unknown as Envelope[], handler),
    ).rejects.toMatchObject({ code: 'INVALID_ENVELOPE' });
    await expect(inbox.processBatch(null as unknown as Envelope[], handler)).rejects.toMatchObject({
      code: 'INVALID_ENVELOPE',
    });
    expect(await countEffects(store, good.id as string)).toBe(0);
  });

  it('a handler error whose message holds U+0000 is retried and dead-lettered, never thrown', async () => {
    const consumer = freshId('nul-error');
    const inbox = createInbox({ store, consumer, maxAttempts: 2 });
    const env: Envelope = { id: freshId(), headers: {}, body: 'x', delivery: {} };
    const failing = async () => {
      throw new Error('bad \u0000 byte \ud800');
    };
    const first = await inbox.process(env, failing);
    expect(first.status).toBe('failed');
    const second = await inbox.process(env, failing);
    expect(second).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS' });
    const letters = await createDeadLetters(store).list({ consumer });
    expect(letters[0]?.errorMessage).toContain('bad \\u0000 byte \ufffd');
  });
});
