import fc from 'fast-check';
import {
  createOperations,
  isInvalidOperationInputError,
  isJustonceError,
  type Operations,
  type RunOptions,
} from '../src';
import { unwritableText } from '../src/common/text';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { watchStatements } from './fixtures/statements';

/**
 * Property tests of idempotent operations against arbitrary, hostile input from plain
 * JavaScript: keys, scopes, operation names, requests, responses and thrown errors. A call
 * either settles as the operation says or throws a JustonceError (refused input before any
 * SQL); a response is replayed byte for byte; a failure is always recorded. `FC_RUNS` raises
 * the number of runs for a long session.
 */
const RUNS = Number(process.env.FC_RUNS ?? 100);
/** `FC_SEED` and `FC_PATH` replay a counterexample fast-check printed. */
const REPLAY =
  process.env.FC_SEED === undefined
    ? {}
    : { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH, endOnFailure: true };
/** A call that takes longer than this counts as a hang. */
const HANG_MS = 10_000;

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** U+0000 and lone surrogates, and U+FEFF, which PGlite drops from the start of text. */
const injected = fc.constantFrom(
  '\u0000',
  '\ud800',
  '\udc00',
  '\udfff\ud800',
  'a\u0000b',
  '\ufeff',
);
const binary = fc.string({ unit: 'binary', maxLength: 12 });
const nasty = fc.tuple(binary, injected, binary).map(([a, b, c]) => a + b + c);
const wrong: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
  fc.boolean(),
  fc.bigInt(),
  fc.constant(Symbol('s')),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.object({ maxDepth: 1 }),
  fc.constant(() => 'fn'),
);
/** Mostly good names, sometimes not. */
const text: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 20, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
  { weight: 3, arbitrary: binary },
  { weight: 3, arbitrary: nasty },
  { weight: 1, arbitrary: fc.integer({ min: 180, max: 300 }).map((n) => 'x'.repeat(n)) },
  { weight: 2, arbitrary: wrong },
);
/** Nested arrays deeper than any stack: serializing them overflows. */
function deep(depth: number): unknown {
  let value: unknown = [];
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}
const throwingToJson = {
  toJSON(): never {
    throw new Error('no JSON for you \u0000');
  },
};
const request: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }) },
  { weight: 2, arbitrary: nasty },
  { weight: 2, arbitrary: fc.anything({ maxDepth: 2, withBigInt: true, withMap: true }) },
  { weight: 1, arbitrary: wrong },
  { weight: 1, arbitrary: fc.constantFrom(throwingToJson, deep(20_000)) },
);
/** JSON values whose object keys come in every order, integer-like keys and U+0000 included. */
const jsonKey = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.nat({ max: 20 }).map(String),
  nasty,
  fc.constantFrom('__proto__', 'constructor', 'toJSON'),
);
const { response } = fc.letrec<{ response: unknown }>((tie) => ({
  response: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.jsonValue({ maxDepth: 0, stringUnit: 'binary' }),
    nasty,
    fc.array(tie('response'), { maxLength: 4 }),
    fc.dictionary(jsonKey, tie('response'), { maxKeys: 5 }),
  ),
}));

/** Runs `call`, failing the property (instead of the test) when it does not settle. */
async function settle<T>(call: () => Promise<T>): Promise<{ value: T } | { error: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the call did not settle in ${HANG_MS} ms`)),
      HANG_MS,
    );
  });
  try {
    const settled = call().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    return await Promise.race([settled, hang]);
  } finally {
    clearTimeout(timer);
  }
}

function mustBeJustonce(error: unknown): asserts error is Error {
  if (!isJustonceError(error)) {
    throw new Error(`not a JustonceError: ${String(error)}`, { cause: error });
  }
}

describe.each(ALL_STORE_KINDS)('operations with arbitrary input on %s', (kind) => {
  let store: TestStore;
  let round = 0;
  let queries = 0;
  let stopWatching = (): void => undefined;
  beforeAll(async () => {
    store = await openTestStore(kind);
    stopWatching = watchStatements(store.knex, () => {
      queries += 1;
    });
  });
  afterAll(async () => {
    stopWatching();
    await store.dispose();
  });

  it('runs or refuses any key, scope, operation and request with a JustonceError before any SQL', async () => {
    const ops = createOperations({ store, operation: 'fuzz' });
    const started = Date.now();
    const seen = { ok: 0, refused: new Map<string, number>() };
    const options: fc.Arbitrary<unknown> = fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      {
        weight: 4,
        arbitrary: fc.record({ scope: text, operation: text }, { requiredKeys: [] }),
      },
      { weight: 1, arbitrary: wrong },
    );
    await fc.assert(
      fc.asyncProperty(text, request, options, response, async (key, req, opts, res) => {
        let runs = 0;
        const effect = async (): Promise<unknown> => {
          runs += 1;
          return res;
        };
        const sent = queries;
        const call = (): Promise<unknown> =>
          ops.run(key as string, req, effect, opts as RunOptions);
        const first = await settle(call);
        if ('error' in first) {
          mustBeJustonce(first.error);
          const { code } = first.error as Error & { code: string };
          seen.refused.set(code, (seen.refused.get(code) ?? 0) + 1);
          // Refused input never reaches the database.
          if (isInvalidOperationInputError(first.error)) expect(queries).toBe(sent);
          return;
        }
        seen.ok += 1;
        const target = (opts ?? {}) as { scope?: string; operation?: string };
        const record = await ops.get(key as string, target);
        // The record is under exactly the given names, not a lossy copy of them.
        expect(record).toMatchObject({
          key,
          scope: target.scope ?? 'default',
          operation: target.operation ?? 'fuzz',
          status: 'SUCCEEDED',
        });
        const again = await settle(call);
        if ('error' in again) throw again.error;
        expect(JSON.stringify(again.value)).toBe(JSON.stringify(first.value));
        // Executed once by the first call, or replayed from an earlier run: never twice.
        expect(runs).toBeLessThanOrEqual(1);
      }),
      { numRuns: RUNS, ...REPLAY },
    );
    process.stdout.write(
      `operations.run on ${kind}: ${RUNS} runs in ${Date.now() - started} ms, ${seen.ok} ran, refused ${JSON.stringify(Object.fromEntries(seen.refused))}\n`,
    );
    expect(seen.ok).toBeGreaterThan(0);
    expect(seen.refused.size).toBeGreaterThan(0);
  });

  it('replays a response byte for byte, to run, reserve and get', async () => {
    const ops = createOperations({ store, operation: 'replay' });
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(response, fc.boolean(), async (res, byHand) => {
        round += 1;
        const key = `r-${round}`;
        const expected = JSON.stringify(res === undefined ? null : res);
        let first: unknown;
        if (byHand) {
          const reservation = await ops.reserve(key, { round });
          if (reservation.kind !== 'acquired') throw new Error(`got ${reservation.kind}`);
          first = await ops.complete(reservation.ref, res);
        } else {
          first = await ops.run(key, { round }, async () => res);
        }
        expect(JSON.stringify(first)).toBe(expected);
        const replayed = await ops.run(key, { round }, async () => 'never');
        expect(JSON.stringify(replayed)).toBe(expected);
        const reserved = await ops.reserve(key, { round });
        expect(reserved.kind).toBe('completed');
        expect(JSON.stringify(reserved.kind === 'completed' && reserved.response)).toBe(expected);
        expect(JSON.stringify((await ops.get(key))?.response)).toBe(expected);
      }),
      { numRuns: RUNS, ...REPLAY },
    );
    process.stdout.write(`replay on ${kind}: ${RUNS} runs in ${Date.now() - started} ms\n`);
  });

  it('records whatever an effect throws, and replays a final failure as a JustonceError', async () => {
    const final = createOperations({ store, operation: 'fail-final', isRetriable: () => false });
    const retry = createOperations({ store, operation: 'fail-retry', isRetriable: () => true });
    const started = Date.now();
    const thrown: fc.Arbitrary<unknown> = fc.oneof(
      fc
        .record({ message: fc.oneof(binary, nasty), name: fc.oneof(binary, nasty) })
        .map(({ message, name }) => Object.assign(new Error(message), { name })),
      fc
        .tuple(fc.oneof(binary, nasty), fc.oneof(binary, nasty))
        .map(([message, code]) => Object.assign(new Error(message), { code })),
      fc.string({ unit: 'binary', minLength: 999, maxLength: 1001 }).map((m) => new Error(m)),
      nasty,
      wrong,
      fc.constant(Object.create(null) as object),
      fc.constant({ message: 42, name: null, code: {} }),
    );
    await fc.assert(
      fc.asyncProperty(thrown, fc.boolean(), fc.boolean(), async (error, retriable, byHand) => {
        round += 1;
        const key = `f-${round}`;
        const ops: Operations = retriable ? retry : final;
        let rejection: { error: unknown } | { value: unknown };
        if (byHand) {
          const reservation = await ops.reserve(key, 1);
          if (reservation.kind !== 'acquired') throw new Error(`got ${reservation.kind}`);
          rejection = await settle(() => ops.fail(reservation.ref, error, { retriable }));
          // Recording a failure by hand succeeds, whatever the failure holds.
          if ('error' in rejection) throw rejection.error;
        } else {
          rejection = await settle(() =>
            ops.run(key, 1, async () => {
              throw error;
            }),
          );
          // The caller gets the effect's own error, untouched.
          if (!('error' in rejection)) throw new Error('the effect threw, run did not');
          expect(rejection.error).toBe(error);
        }
        const record = await ops.get(key);
        expect(record?.status).toBe(retriable ? 'FAILED_RETRIABLE' : 'FAILED_FINAL');
        const failure = record!.error!;
        // What is stored can be written: U+0000 and lone surrogates were made storable.
        expect([failure.name, failure.message].map(unwritableText)).toEqual([undefined, undefined]);
        if (!retriable) {
          const replay = await settle(() => ops.run(key, 1, async () => 'never'));
          if (!('error' in replay)) throw new Error('a final failure ran again');
          mustBeJustonce(replay.error);
          expect(replay.error).toMatchObject({ code: 'OPERATION_FAILED', failure });
        }
      }),
      { numRuns: RUNS, ...REPLAY },
    );
    process.stdout.write(`failures on ${kind}: ${RUNS} runs in ${Date.now() - started} ms\n`);
  });
});
