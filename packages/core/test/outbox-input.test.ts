import fc from 'fast-check';
import type { Knex } from 'knex';
import {
  createOutbox,
  deriveMessageId,
  isJustonceError,
  rowsOf,
  type AddOptions,
  type EventCause,
  type Outbox,
  type OutboxEvent,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { watchStatements } from './fixtures/statements';

/**
 * Property tests of `outbox.add` against arbitrary, hostile input from plain JavaScript:
 * whatever it is given, a call either returns ids whose rows read back exactly, or throws a
 * JustonceError and writes nothing, and the caller's transaction (with its business write)
 * stays usable. `FC_RUNS` raises the number of runs for a long session.
 */
const RUNS = Number(process.env.FC_RUNS ?? 100);
/** `FC_SEED` and `FC_PATH` replay a counterexample fast-check printed. */
const REPLAY =
  process.env.FC_SEED === undefined
    ? {}
    : { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true };
/** A call that takes longer than this counts as a hang. */
const HANG_MS = 10_000;
/** Payload limit of the outbox under test, so "too large" is cheap to reach. */
const MAX_PAYLOAD = 16 * 1024;

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

interface OutboxRow {
  destination: string;
  partition_key: string | null;
  message_id: string;
  headers: Record<string, string>;
  payload: Uint8Array;
}

/** Text PostgreSQL cannot store at all, or not unchanged, wherever it goes. */
const alwaysBad = fc.constantFrom('\u0000', '\ud800', '\udc00', '\udfff\ud800', 'a\u0000b');
/** Also U+FEFF, which PGlite drops from the start of a text value it reads back. */
const injected = fc.oneof(alwaysBad, fc.constant('\ufeff'));
const binary = fc.string({ unit: 'binary', maxLength: 12 });
const nasty = fc.tuple(binary, injected, binary).map(([a, b, c]) => a + b + c);
const huge = fc.integer({ min: 256, max: 4000 }).map((n) => 'x'.repeat(n));
const wrong: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.bigInt(),
  fc.constant(Symbol('s')),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.object({ maxDepth: 1 }),
  fc.constant(() => 'fn'),
);
/** Mostly good text, sometimes not. */
const text: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 24, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
  { weight: 3, arbitrary: binary },
  { weight: 2, arbitrary: nasty },
  { weight: 1, arbitrary: huge },
  { weight: 1, arbitrary: wrong },
);
const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: arb });

const payload: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }) },
  { weight: 2, arbitrary: binary },
  { weight: 1, arbitrary: nasty },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: MAX_PAYLOAD - 8, max: MAX_PAYLOAD + 8 }).map((n) => 'p'.repeat(n)),
  },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }) },
  { weight: 1, arbitrary: wrong },
);
const headers: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.dictionary(
      fc.oneof(
        { weight: 8, arbitrary: fc.string({ maxLength: 8 }) },
        { weight: 1, arbitrary: binary },
        { weight: 1, arbitrary: nasty },
      ),
      text,
      {
        maxKeys: 4,
      },
    ),
  },
  { weight: 2, arbitrary: fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }) },
  { weight: 1, arbitrary: wrong },
);
const messageId: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: text },
  // A few fixed ids: later runs find them committed by earlier ones.
  { weight: 2, arbitrary: fc.constantFrom('dup-a', 'dup-b', 'dup-c') },
);
const event: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record(
      {
        destination: text,
        key: fc.oneof(fc.constant(null), text),
        messageId,
        headers,
        payload,
      },
      { requiredKeys: ['destination', 'payload'] },
    ),
  },
  { weight: 1, arbitrary: wrong },
);
const cause: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        consumer: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom('billing', 'ship') },
          { weight: 1, arbitrary: text },
        ),
        messageId: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom('in-1', 'in-2') },
          { weight: 1, arbitrary: text },
        ),
        scope: optional(text),
        correlationId: optional(text),
        traceparent: optional(text),
        tracestate: optional(text),
      },
      { requiredKeys: ['consumer', 'messageId'] },
    ),
  },
  { weight: 1, arbitrary: wrong },
);
const startIndex: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.nat({ max: 1000 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(-1, 1.5, Number.NaN, Infinity, 2 ** 53, Number.MAX_SAFE_INTEGER),
  },
  { weight: 1, arbitrary: wrong },
);
const addOptions: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: fc.record({ cause, startIndex }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: wrong },
);
const events: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.array(event, { maxLength: 4 }) },
  { weight: 3, arbitrary: event },
  { weight: 1, arbitrary: fc.sparseArray(event, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, 7, 'event', [null], [undefined], [[]]) },
);

/** `outbox.add`, failing the property (instead of the test) when it does not settle. */
async function addOrHang(
  outbox: Outbox,
  trx: Knex.Transaction,
  given: unknown,
  options: unknown,
): Promise<{ ids: string[] } | { error: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`outbox.add did not settle in ${HANG_MS} ms`)),
      HANG_MS,
    );
  });
  try {
    const ids = await Promise.race([
      outbox.add(trx, given as OutboxEvent[], options as AddOptions),
      hang,
    ]);
    return { ids };
  } catch (error) {
    if (error instanceof Error && error.message.includes('did not settle')) throw error;
    return { error };
  } finally {
    clearTimeout(timer);
  }
}

/** The bytes `add` must store for a payload. */
function expectedPayload(value: unknown): Buffer {
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/** The headers `add` must store, built as a null-prototype object so `__proto__` is a key. */
function expectedHeaders(
  e: OutboxEvent,
  c: EventCause | undefined,
  id: string,
): Record<string, string> {
  const h = Object.create(null) as Record<string, string>;
  if (!(e.payload instanceof Uint8Array) && typeof e.payload !== 'string') {
    h['content-type'] = 'application/json';
  }
  if (c) {
    h['causation-id'] = c.messageId;
    h['correlation-id'] = c.correlationId ?? c.messageId;
    if (c.traceparent !== undefined) h.traceparent = c.traceparent;
    if (c.tracestate !== undefined) h.tracestate = c.tracestate;
    if (c.scope !== undefined && c.scope !== '') h.tenant = c.scope;
  }
  for (const [name, value] of Object.entries(e.headers ?? {})) h[name] = value;
  h['message-id'] = id;
  return h;
}

/** Same entries, in any order, with `__proto__` compared as a plain key. */
function sameEntries(actual: Record<string, string>, expected: Record<string, string>): boolean {
  const a = Object.entries(actual).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  const b = Object.entries(expected).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return JSON.stringify(a) === JSON.stringify(b);
}

describe.each(ALL_STORE_KINDS)('outbox.add with arbitrary input on %s', (kind) => {
  let store: TestStore;
  let business: string;
  let outboxTable: string;
  let run = 0;

  beforeAll(async () => {
    store = await openTestStore(kind);
    business = store.names.table('fuzz_business');
    outboxTable = store.names.table('outbox');
    await store.knex.raw(`create table ${business} (id integer primary key)`);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const countRows = async (): Promise<number> =>
    Number(
      rowsOf<{ n: number | string }>(
        await store.knex.raw(`select count(*) as n from ${outboxTable}`),
      )[0]!.n,
    );

  it('returns ids of rows that read back exactly, or refuses with a JustonceError and writes nothing of the call', async () => {
    const outbox = createOutbox({
      store,
      maxPayloadBytes: MAX_PAYLOAD,
      notify: kind === 'postgres',
    });
    const started = Date.now();
    const seen = { ok: 0, refused: new Map<string, number>() };
    await fc.assert(
      fc.asyncProperty(events, addOptions, async (given, options) => {
        run += 1;
        const businessId = run;
        const before = await countRows();
        let outcome: { ids: string[] } | { error: unknown } | undefined;
        let afterRefusal: unknown;
        await store.knex
          .transaction(async (trx) => {
            await trx.raw(`insert into ${business} (id) values (?)`, [businessId]);
            outcome = await addOrHang(outbox, trx, given, options);
            // The caller's transaction must still run statements after a refusal.
            try {
              await trx.raw('select 1');
            } catch (error) {
              afterRefusal = error;
            }
          })
          .catch((error: unknown) => {
            afterRefusal ??= error;
          });
        if (outcome === undefined) throw afterRefusal ?? new Error('add gave no outcome');
        if ('error' in outcome) {
          const { error } = outcome;
          if (!isJustonceError(error)) {
            throw new Error(`not a JustonceError: ${String(error)}`, { cause: error });
          }
          const field = (error as { field?: string }).field;
          const kind = field === undefined ? error.code : `${error.code}:${field}`;
          seen.refused.set(kind, (seen.refused.get(kind) ?? 0) + 1);
        }
        if (afterRefusal !== undefined) {
          throw new Error(`the caller's transaction is no longer usable: ${String(afterRefusal)}`, {
            cause: afterRefusal,
          });
        }
        const committed = rowsOf(
          await store.knex.raw(`select id from ${business} where id = ?`, [businessId]),
        );
        expect(committed).toHaveLength(1);
        const after = await countRows();
        if ('error' in outcome) {
          // Nothing of a refused call is in the outbox.
          expect(after).toBe(before);
          return;
        }
        seen.ok += 1;
        const { ids } = outcome;
        const list = (Array.isArray(given) ? given : [given]) as OutboxEvent[];
        expect(ids).toHaveLength(list.length);
        expect(after).toBe(before + ids.length);
        if (ids.length === 0) return;
        const stored = rowsOf<OutboxRow>(
          await store.knex.raw(
            `select destination, partition_key, message_id, headers, payload
               from ${outboxTable} where message_id in (${ids.map(() => '?').join(', ')})`,
            ids,
          ),
        );
        const byId = new Map(stored.map((r) => [r.message_id, r]));
        const opts = (options ?? {}) as AddOptions;
        list.forEach((e, i) => {
          const id = ids[i]!;
          const row = byId.get(id);
          expect(row).toBeDefined();
          if (e.messageId !== undefined) expect(id).toBe(e.messageId);
          else if (opts.cause) {
            const c = opts.cause;
            expect(id).toBe(
              deriveMessageId(c.consumer, c.messageId, (opts.startIndex ?? 0) + i, c.scope ?? ''),
            );
          }
          expect(row!.destination).toBe(e.destination);
          expect(row!.partition_key).toBe(e.key ?? null);
          expect(Buffer.from(row!.payload).equals(expectedPayload(e.payload))).toBe(true);
          const want = expectedHeaders(e, opts.cause, id);
          if (!sameEntries(row!.headers, want)) {
            throw new Error(
              `headers read back as ${JSON.stringify(row!.headers)}, expected ${JSON.stringify(want)}`,
            );
          }
        });
      }),
      { numRuns: RUNS, ...REPLAY },
    );
    process.stdout.write(
      `outbox.add on ${kind}: ${RUNS} runs in ${Date.now() - started} ms, ${seen.ok} accepted, refused ${JSON.stringify(Object.fromEntries(seen.refused))}\n`,
    );
    // The generators must exercise both outcomes.
    expect(seen.ok).toBeGreaterThan(0);
    expect(seen.refused.size).toBeGreaterThan(0);
  });

  it('names the one bad field of a call, before any SQL, and keeps the transaction usable', async () => {
    const outbox = createOutbox({ store, notify: false });
    const started = Date.now();
    const fields = [
      'destination',
      'key',
      'messageId',
      'header name',
      'header value',
      'payload',
      'cause.consumer',
      'cause.messageId',
      'cause.scope',
      'cause.correlationId',
      'cause.traceparent',
      'cause.tracestate',
    ] as const;
    const good = fc.record({
      destination: fc.string({ minLength: 1, maxLength: 8 }).map((d) => `d-${d}`),
      key: fc.string({ maxLength: 8 }),
      payload: fc.jsonValue({ maxDepth: 2 }),
      headers: fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.string(), {
        maxKeys: 3,
      }),
    });
    let queries = 0;
    const stopWatching = watchStatements(store.knex, () => {
      queries += 1;
    });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(good, { minLength: 1, maxLength: 6 }),
          fc.nat(),
          fc.constantFrom(...fields),
          fc.tuple(binary, alwaysBad, binary),
          async (list, at, field, [before, bad, after]) => {
            const index = at % list.length;
            const events: Record<string, unknown>[] = list.map((e) => ({ ...e }));
            const cause: Record<string, string> = { consumer: 'c', messageId: 'm' };
            // U+0000 is fine in a string payload (it is stored as bytes): only surrogates count.
            const value =
              field === 'payload' && !/[\ud800-\udfff]/.test(bad)
                ? `${before}\ud800${after}`
                : before + bad + after;
            const target = events[index]!;
            if (field === 'header name') target.headers = { [value]: 'v' };
            else if (field === 'header value') target.headers = { h: value };
            else if (field.startsWith('cause.')) cause[field.slice('cause.'.length)] = value;
            else target[field] = value;
            let error: unknown;
            await store.knex.transaction(async (trx) => {
              const sent = queries;
              error = await outbox
                .add(trx, events as unknown as OutboxEvent[], {
                  cause: cause as unknown as EventCause,
                })
                .then(
                  () => undefined,
                  (e: unknown) => e,
                );
              expect(queries).toBe(sent);
              await trx.raw('select 1');
              // The counter does see this transaction's statements.
              expect(queries).toBe(sent + 1);
            });
            const expected = field.startsWith('cause.')
              ? { field: 'cause', index: 0 }
              : { field: field.startsWith('header') ? 'headers' : field, index };
            expect(error).toMatchObject({ code: 'INVALID_EVENT', ...expected });
          },
        ),
        { numRuns: RUNS, ...REPLAY },
      );
    } finally {
      stopWatching();
    }
    process.stdout.write(`one bad field on ${kind}: ${RUNS} runs in ${Date.now() - started} ms\n`);
  });

  it('writes nothing of a call refused for an id already in the table, keeping earlier calls', async () => {
    const outbox = createOutbox({ store });
    const started = Date.now();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.jsonValue({ maxDepth: 2 }), { minLength: 1, maxLength: 30 }),
        fc.nat(),
        fc.boolean(),
        async (payloads, at, sameTransaction) => {
          round += 1;
          const prefix = `aon-${kind}-${round}`;
          const taken = `${prefix}-taken`;
          const earlier = `${prefix}-earlier`;
          const events: OutboxEvent[] = payloads.map((payload, i) => ({
            destination: 'd',
            key: `k${i % 3}`,
            payload,
            messageId: `${prefix}-${i}`,
          }));
          events.splice(at % (events.length + 1), 0, {
            destination: 'd',
            payload: 0,
            messageId: taken,
          });
          if (!sameTransaction) {
            await store.knex.transaction((trx) =>
              outbox.add(trx, { destination: 'd', payload: 1, messageId: taken }),
            );
          }
          const before = await countRows();
          let error: unknown;
          await store.knex.transaction(async (trx) => {
            await outbox.add(trx, { destination: 'd', payload: 2, messageId: earlier });
            if (sameTransaction) {
              await outbox.add(trx, { destination: 'd', payload: 1, messageId: taken });
            }
            error = await outbox.add(trx, events).then(
              () => undefined,
              (e: unknown) => e,
            );
            await trx.raw('select 1');
          });
          expect(error).toMatchObject({ code: 'DUPLICATE_MESSAGE_ID', messageIds: [taken] });
          // Only the earlier calls of the transaction committed.
          expect(await countRows()).toBe(before + (sameTransaction ? 2 : 1));
          const left = rowsOf<{ message_id: string }>(
            await store.knex.raw(
              `select message_id from ${outboxTable} where message_id like ? order by message_id`,
              [`${prefix}-%`],
            ),
          ).map((r) => r.message_id);
          expect(left).toEqual([earlier, taken]);
        },
      ),
      { numRuns: RUNS, ...REPLAY },
    );
    process.stdout.write(`all or nothing on ${kind}: ${RUNS} runs in ${Date.now() - started} ms\n`);
  });
});
