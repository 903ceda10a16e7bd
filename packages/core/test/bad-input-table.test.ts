/**
 * docs/bad-input.md, row by row: each row of its table has a case here that produces that
 * kind of bad input and observes what the caller gets (outcome status, reason, error code)
 * and what was written. The codes the row names in backticks must be exactly the ones
 * observed, and every row must have a case (and every case a row).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createDeadLetters,
  createInbox,
  createOperations,
  createOutbox,
  isJustonceError,
  rowsOf,
  defineMessage,
  messageHandler,
  on,
  type Envelope,
  type Handler,
  type HandlerContext,
  type Store,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { freshId } from './fixtures/inbox-support';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';
import { z } from 'zod';

interface Row {
  readonly kind: string;
  readonly gets: string;
  readonly goes: string;
}

/** The rows of the first table in docs/bad-input.md. */
function docRows(): Row[] {
  const text = readFileSync(join(__dirname, '../../../docs/bad-input.md'), 'utf8');
  const lines = text.split('\n').filter((l) => l.startsWith('|'));
  return lines.slice(2).map((line) => {
    const [kind = '', gets = '', goes = ''] = line
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim());
    return { kind, gets, goes };
  });
}

/** Backticked words in a cell that look like codes or outcome names. */
function codesIn(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)]
    .map((m) => m[1] as string)
    .filter((word) => /^[A-Z_]+$|^[a-z]+-[a-z-]+$|^[a-z]+$|^[A-Z][A-Za-z]+Error$/.test(word));
}

/** What a case saw: the codes and names the caller got, and whether anything was written. */
interface Seen {
  readonly codes: readonly string[];
}

type TestStore = Store & { dispose(): Promise<void> };
type Case = (store: TestStore) => Promise<Seen>;

const handler = (store: Store) => async (ctx: HandlerContext) => {
  await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
};

const OrderPlaced = defineMessage({
  type: 'order.placed',
  schema: z.object({ id: z.string(), cents: z.number().int() }),
  destination: 'orders',
});

/** `handler`, reached through a route for {@link OrderPlaced}. */
const routed = (store: Store): Handler =>
  messageHandler({ routes: [on(OrderPlaced, async (_order, ctx) => handler(store)(ctx))] });

function env(id: unknown, extra: Partial<Record<keyof Envelope, unknown>> = {}): Envelope {
  return { id, headers: {}, body: 'body', delivery: {}, ...extra } as Envelope;
}

/** Processes one envelope; checks it was acknowledged-worthy and kept; returns its codes. */
async function deadLetterCase(
  store: Store,
  envelope: Envelope,
  options: { decode?: (body: Uint8Array | string) => unknown } = {},
  handle: Handler = handler(store),
): Promise<Seen> {
  const consumer = freshId('table');
  const inbox = createInbox({ store, consumer, ...options });
  const outcome = await inbox.process(envelope, handle);
  expect(outcome.status).toBe('dead-lettered');
  if (outcome.status !== 'dead-lettered') return { codes: [outcome.status] };
  const letter = await createDeadLetters(store).get(outcome.deadLetterId as string);
  expect(letter?.reason).toBe(outcome.reason);
  expect(letter?.messageId).toBe(
    envelope.id === undefined || envelope.id === null ? null : String(envelope.id),
  );
  // Headers come back as given; a value that was not a string as its JSON text.
  const given: Record<string, unknown> = { ...envelope.headers };
  expect(letter?.headers).toEqual(
    Object.fromEntries(
      Object.entries(given).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    ),
  );
  return { codes: [outcome.status, outcome.reason] };
}

/** Runs `fn` in a transaction that also writes a business row; returns the thrown codes. */
async function refusedInTransaction(
  store: Store,
  fn: (trx: Parameters<Parameters<Store['knex']['transaction']>[0]>[0]) => Promise<unknown>,
): Promise<Seen> {
  const marker = freshId('business');
  let thrown: unknown;
  await store.knex.transaction(async (trx) => {
    await writeEffect(trx, store, marker, { scope: 'default' });
    try {
      await fn(trx);
    } catch (error) {
      thrown = error;
    }
    // The caller's transaction is still usable after the refusal.
    await trx.raw('select 1');
  });
  expect(await countEffects(store, marker)).toBe(1);
  expect(isJustonceError(thrown)).toBe(true);
  const error = thrown as { name: string; code: string };
  return { codes: [error.name, error.code] };
}

async function outboxRows(store: Store, messageIds: string[]): Promise<number> {
  if (store.dialect === 'mysql') {
    const [found] = await store.knex
      .withSchema(store.schema)
      .table(store.names.raw('outbox'))
      .whereIn('message_id', messageIds)
      .count({ n: '*' });
    return Number(found?.n ?? 0);
  }
  const result = await store.knex.raw(
    `select count(*)::int as n from ${store.names.table('outbox')} where message_id = any(?)`,
    [messageIds],
  );
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
}

const CASES: Record<string, Case> = {
  'a delivery with no message id': (store) => deadLetterCase(store, env(undefined)),
  'a message id that is not a string, empty, or over `maxIdLength` bytes': async (store) => {
    await deadLetterCase(store, env(''));
    await deadLetterCase(store, env(42));
    return deadLetterCase(store, env('x'.repeat(256)));
  },
  'a message id with U+0000, a lone surrogate or a leading U+FEFF': async (store) => {
    await deadLetterCase(store, env(`${freshId()}\ud800`));
    await deadLetterCase(store, env(`\ufeff${freshId()}`));
    return deadLetterCase(store, env(`${freshId()}\u0000x`));
  },
  'a scope that is not a non-empty string of at most 255 bytes, or holds such text': async (
    store,
  ) => {
    await deadLetterCase(store, env(freshId(), { scope: '' }));
    const seen = await deadLetterCase(store, env(freshId(), { scope: 'tenant\u0000a' }));
    const letters = await createDeadLetters(store).list({ reason: 'INVALID_SCOPE' });
    expect(letters.some((l) => l.scope === 'tenant\u0000a')).toBe(true);
    return seen;
  },
  'headers that are not an object of strings, or a name or value with U+0000 or a lone surrogate':
    async (store) => {
      await deadLetterCase(store, env(freshId(), { headers: { n: 5 } }));
      await deadLetterCase(store, env(freshId(), { headers: { 'x-b': 'lone \ud800' } }));
      return deadLetterCase(store, env(freshId(), { headers: { 'x-a\u0000': 'v\u0000' } }));
    },
  'a body that is neither bytes nor a string, or a string with a lone surrogate': async (store) => {
    await deadLetterCase(store, env(freshId(), { body: { not: 'bytes' } }));
    const seen = await deadLetterCase(store, env(freshId(), { body: 'lone \udc00' }));
    const letters = await createDeadLetters(store).list({ reason: 'INVALID_BODY' });
    expect(letters.some((l) => l.body === 'lone \udc00')).toBe(true);
    return seen;
  },
  "a body the inbox's `decode` option rejects": (store) =>
    deadLetterCase(store, env(freshId(), { body: '{not json' }), {
      decode: (body) => JSON.parse(String(body)),
    }),
  'a typed message (`messageHandler`) whose body is not JSON or fails its schema': async (
    store,
  ) => {
    const headers = { type: OrderPlaced.type };
    const id = freshId();
    await deadLetterCase(store, env(freshId(), { headers, body: '{not json' }), {}, routed(store));
    const seen = await deadLetterCase(
      store,
      env(id, { headers, body: JSON.stringify({ id: 'o1', cents: 'ten' }) }),
      {},
      routed(store),
    );
    expect(await countEffects(store, id)).toBe(0);
    return seen;
  },
  'a delivery whose `type` header no route of `messageHandler` knows': (store) =>
    deadLetterCase(store, env(freshId(), { headers: { type: 'order.lost' } }), {}, routed(store)),
  "a typed `outbox.add` whose payload fails its message type's schema": async (store) => {
    const outbox = createOutbox({ store });
    const id = freshId();
    const seen = await refusedInTransaction(store, (trx) =>
      outbox.add(trx, OrderPlaced, { id: 'o1', cents: 1.5 }, { messageId: id }),
    );
    expect(await outboxRows(store, [id])).toBe(0);
    return seen;
  },
  'an id seen before with a different payload fingerprint': async (store) => {
    const consumer = freshId('table');
    const inbox = createInbox({ store, consumer });
    const id = freshId();
    expect((await inbox.process(env(id, { body: 'one' }), handler(store))).status).toBe(
      'processed',
    );
    const outcome = await inbox.process(env(id, { body: 'two' }), handler(store));
    expect(await countEffects(store, id)).toBe(1);
    return { codes: [outcome.status, 'reason' in outcome ? String(outcome.reason) : ''] };
  },
  'a delivery whose transport count is already over `maxAttempts`': async (store) => {
    const id = freshId();
    const seen = await deadLetterCase(store, env(id, { delivery: { receiveCount: 2 ** 31 } }));
    expect(await countEffects(store, id)).toBe(0);
    return seen;
  },
  'a handler error whose message holds U+0000': async (store) => {
    const consumer = freshId('table');
    const inbox = createInbox({ store, consumer, maxAttempts: 2 });
    const envelope = env(freshId());
    const failing = async () => {
      throw new Error('quoted \u0000 input');
    };
    const first = await inbox.process(envelope, failing);
    const second = await inbox.process(envelope, failing);
    const [letter] = await createDeadLetters(store).list({ consumer });
    expect(letter?.errorMessage).toContain('quoted \\u0000 input');
    return { codes: [first.status, 'reason' in second ? String(second.reason) : second.status] };
  },
  '`process` or `processBatch` given something that is not an envelope object': async (store) => {
    const inbox = createInbox({ store, consumer: freshId('table') });
    const good = env(freshId());
    const errors: unknown[] = [];
    await inbox.process(null as unknown as Envelope, handler(store)).catch((e) => errors.push(e));
    await inbox
      .processBatch([good, 7] as unknown as Envelope[], handler(store))
      .catch((e) => errors.push(e));
    expect(errors).toHaveLength(2);
    expect(await countEffects(store, good.id as string)).toBe(0);
    const codes = errors.flatMap((e) => [(e as Error).name, (e as { code: string }).code]);
    return { codes: [...new Set(codes)] };
  },
  'an outbox event field (destination, key, message id, header) with U+0000': async (store) => {
    const outbox = createOutbox({ store });
    const ids = [freshId(), freshId()];
    const seen = await refusedInTransaction(store, (trx) =>
      outbox.add(trx, [
        { destination: 'orders', messageId: ids[0], payload: { ok: true } },
        { destination: 'orders\u0000', messageId: ids[1], payload: { ok: false } },
      ]),
    );
    expect(await outboxRows(store, ids)).toBe(0);
    return seen;
  },
  'an outbox event whose message id is already in the outbox': async (store) => {
    const outbox = createOutbox({ store });
    const [taken, fresh] = [freshId(), freshId()];
    await store.knex.transaction((trx) =>
      outbox.add(trx, { destination: 'orders', messageId: taken, payload: 1 }),
    );
    const seen = await refusedInTransaction(store, (trx) =>
      outbox.add(trx, [
        { destination: 'orders', messageId: fresh, payload: 2 },
        { destination: 'orders', messageId: taken, payload: 3 },
      ]),
    );
    expect(await outboxRows(store, [fresh])).toBe(0);
    return seen;
  },
  '`outbox.add` outside an open transaction': async (store) => {
    const outbox = createOutbox({ store });
    const error = await outbox
      .add(store.knex as never, { destination: 'orders', payload: 1 })
      .catch((e: unknown) => e);
    expect(isJustonceError(error)).toBe(true);
    const e = error as { name: string; code: string };
    return { codes: [e.name, e.code] };
  },
  'an operation key, scope or name with U+0000 or of the wrong type': async (store) => {
    const operations = createOperations({ store });
    let ran = 0;
    const effect = async () => {
      ran += 1;
      return { ok: true };
    };
    const errors: unknown[] = [
      await operations.run('k\u0000', {}, effect, { operation: 'charge' }).catch((e) => e),
      await operations
        .run(freshId(), {}, effect, { operation: 'charge', scope: 'a\ud800' })
        .catch((e) => e),
      await operations.run(freshId(), {}, effect, { operation: 7 } as never).catch((e) => e),
    ];
    expect(ran).toBe(0);
    for (const error of errors) expect(isJustonceError(error)).toBe(true);
    const codes = errors.flatMap((e) => [(e as Error).name, (e as { code: string }).code]);
    return { codes: [...new Set(codes)] };
  },
  'a `ctx.once` step name empty, over 100 characters or with U+0000, or an unknown option': async (
    store,
  ) => {
    const operations = createOperations({ store });
    let called = 0;
    const fn = async () => {
      called += 1;
      return 1;
    };
    const errors: unknown[] = [];
    await operations.run(
      freshId(),
      {},
      async (ctx) => {
        for (const step of ['', 'x'.repeat(101), 'a\u0000b']) {
          errors.push(await ctx.once(step, fn).catch((e: unknown) => e));
        }
        errors.push(await ctx.once('ok', fn, { retries: 1 } as never).catch((e: unknown) => e));
        return { ok: true };
      },
      { operation: 'bad-steps' },
    );
    expect(called).toBe(0);
    expect(errors).toHaveLength(4);
    const steps = await store.knex.raw(
      `select count(*) as n from ${store.names.table('idempotency')} where operation like 'once:%'`,
    );
    expect(Number(rowsOf<{ n: number | string }>(steps)[0]?.n)).toBe(0);
    for (const error of errors) expect(isJustonceError(error)).toBe(true);
    const codes = errors.flatMap((e) => [(e as Error).name, (e as { code: string }).code]);
    return { codes: [...new Set(codes)] };
  },
  'an option name the factory does not know (`batchsize`)': async (store) => {
    let thrown: unknown;
    try {
      createInbox({ store, consumer: 'c', batchsize: 10 } as never);
    } catch (error) {
      thrown = error;
    }
    expect(String((thrown as Error).message)).toContain('batchsize');
    const e = thrown as { name: string; code: string };
    return { codes: [e.name, e.code] };
  },
};

describe.each(ALL_STORE_KINDS)('docs/bad-input.md on %s', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('every row has a case and every case a row', () => {
    expect(
      docRows()
        .map((r) => r.kind)
        .sort(),
    ).toEqual(Object.keys(CASES).sort());
  });

  it.each(docRows().map((row) => [row.kind, row] as const))('%s', async (_kind, row) => {
    const run = CASES[row.kind];
    expect(run).toBeDefined();
    if (run === undefined) return;
    const seen = await run(store);
    expect([...new Set(seen.codes)].sort()).toEqual([...new Set(codesIn(row.gets))].sort());
  });
});
