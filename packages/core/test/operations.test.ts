import {
  createOperations,
  isLeaseLostError,
  isOperationConflictError,
  isOperationFailedError,
  isOperationInProgressError,
  isResponseTooLargeError,
  rowsOf,
  JustonceError,
  type OperationContext,
  type Operations,
  type OperationsOptions,
} from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { DeclinedError, TransientError } from './fixtures/operations-support';
import { gate, rejection } from './fixtures/gate';

/** How long the checks below wait for an operation's state, and how often they look. */
const SOON = { timeoutMs: 5_000, intervalMs: 20 };

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

describe.each(ALL_STORE_KINDS)('idempotent operations on %s', (kind) => {
  let store: TestStore;
  let sequence = 0;
  /** Operations on a fresh operation name, so tests never see each other's records. */
  const operations = (options: Omit<OperationsOptions, 'store'> = {}): Operations =>
    createOperations({ store, operation: `op-${(sequence += 1)}`, ...options });

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('runs the effect once and replays the stored response to a duplicate', async () => {
    const ops = operations();
    let runs = 0;
    const effect = async (ctx: OperationContext) => {
      runs += 1;
      return { chargeId: `ch_${ctx.key}`, at: new Date('2026-01-02T03:04:05.000Z') };
    };
    const first = await ops.run('order-1', { amount: 10, currency: 'EUR' }, effect);
    const second = await ops.run('order-1', { currency: 'EUR', amount: 10 }, effect);
    expect(runs).toBe(1);
    // Both callers see the same JSON shape: the date comes back as its ISO string.
    expect(first).toEqual({ chargeId: 'ch_order-1', at: '2026-01-02T03:04:05.000Z' });
    expect(second).toEqual(first);
    const record = await ops.get('order-1');
    expect(record).toMatchObject({ status: 'SUCCEEDED', attempts: 1, response: first });
    expect(record?.leaseUntil).toBeUndefined();
    expect(record?.expiresAt?.getTime()).toBeGreaterThan(Date.now() + 6 * 24 * 3600 * 1000);
  });

  it('passes the key, owner and attempt to the effect', async () => {
    const ops = operations();
    const seen = await ops.run('pay-7', { n: 1 }, async (ctx) => ({
      key: ctx.key,
      scope: ctx.scope,
      attempt: ctx.attempt,
      owner: ctx.ownerId,
      aborted: ctx.signal.aborted,
    }));
    expect(seen).toMatchObject({ key: 'pay-7', scope: 'default', attempt: 1, aborted: false });
    expect(seen.owner).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses the same key with a different request as a conflict', async () => {
    const ops = operations();
    await ops.run('k', { amount: 10 }, async () => 'ok');
    const error = await rejection(ops.run('k', { amount: 1000 }, async () => 'never'));
    expect(isOperationConflictError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'OPERATION_CONFLICT', retriable: false });
    // A conflict while the first is still in progress is a conflict too, not "in progress".
    const hold = gate();
    const running = ops.run('k2', { amount: 10 }, () => hold.promise.then(() => 'done'));
    await waitFor('k2 to be reserved', async () => (await ops.get('k2')) !== undefined, SOON);
    const busy = await rejection(ops.run('k2', { amount: 11 }, async () => 'never'));
    expect(isOperationConflictError(busy)).toBe(true);
    hold.open();
    await expect(running).resolves.toBe('done');
  });

  it('rejects a duplicate while the first is in progress when waiting is off', async () => {
    const ops = operations();
    const hold = gate();
    let runs = 0;
    const first = ops.run('k', { a: 1 }, async () => {
      runs += 1;
      await hold.promise;
      return 'first';
    });
    await waitFor(
      'k to be in progress',
      async () => (await ops.get('k'))?.status === 'IN_PROGRESS',
      SOON,
    );
    const error = await rejection(ops.run('k', { a: 1 }, async () => 'second'));
    expect(isOperationInProgressError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'OPERATION_IN_PROGRESS', retriable: true });
    hold.open();
    await expect(first).resolves.toBe('first');
    await expect(ops.run('k', { a: 1 }, async () => 'third')).resolves.toBe('first');
    expect(runs).toBe(1);
  });

  it('lets a duplicate wait for the owner and get its response', async () => {
    const ops = operations({ waitForInProgressMs: 10_000, pollIntervalMs: 10 });
    const hold = gate();
    const first = ops.run('k', { a: 1 }, async () => {
      await hold.promise;
      return { done: true };
    });
    await waitFor(
      'k to be in progress',
      async () => (await ops.get('k'))?.status === 'IN_PROGRESS',
      SOON,
    );
    let settled = false;
    const second = ops.run('k', { a: 1 }, async () => ({ done: false }));
    void second.then(() => {
      settled = true;
    });
    // The duplicate is still waiting while the owner is held.
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(settled).toBe(false);
    hold.open();
    await expect(second).resolves.toEqual({ done: true });
    await expect(first).resolves.toEqual({ done: true });
  });

  it('gives up waiting after waitForInProgressMs with an in-progress error', async () => {
    const ops = operations({ pollIntervalMs: 10 });
    const hold = gate();
    const first = ops.run('k', 1, () => hold.promise.then(() => 'first'));
    await waitFor(
      'k to be in progress',
      async () => (await ops.get('k'))?.status === 'IN_PROGRESS',
      SOON,
    );
    const started = Date.now();
    const error = await rejection(ops.run('k', 1, async () => 'x', { waitForInProgressMs: 80 }));
    expect(isOperationInProgressError(error)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
    hold.open();
    await first;
  });

  it('hands an expired lease to a new owner and fences off the stale one', async () => {
    const ops = operations({ leaseMs: 150 });
    const stale = await ops.reserve('k', { a: 1 });
    if (stale.kind !== 'acquired') throw new Error(`expected acquired, got ${stale.kind}`);
    // The stale owner "crashes": it never finalizes. A new caller takes over after the lease.
    const fresh = await waitFor(
      'a new caller to take over the expired lease',
      async () => {
        const r = await ops.reserve('k', { a: 1 });
        return r.kind === 'acquired' ? r : undefined;
      },
      SOON,
    );
    expect(fresh.ref.ownerId).not.toBe(stale.ref.ownerId);
    expect(fresh.ref.attempt).toBe(2);
    // The stale owner wakes up: none of its writes may land.
    for (const write of [
      () => ops.complete(stale.ref, 'stale'),
      () => ops.fail(stale.ref, new Error('stale'), { retriable: false }),
      () => ops.extendLease(stale.ref),
    ]) {
      const error = await rejection(write());
      expect(isLeaseLostError(error)).toBe(true);
      expect(error).toMatchObject({
        code: 'LEASE_LOST',
        currentOwnerId: fresh.ref.ownerId,
        currentStatus: 'IN_PROGRESS',
      });
    }
    await expect(ops.complete(fresh.ref, 'fresh')).resolves.toBe('fresh');
    const late = await rejection(ops.complete(stale.ref, 'stale'));
    expect(isLeaseLostError(late)).toBe(true);
    expect(await ops.get('k')).toMatchObject({ status: 'SUCCEEDED', response: 'fresh' });
    // Finalizing twice is refused as well: the record is no longer IN_PROGRESS.
    expect(isLeaseLostError(await rejection(ops.complete(fresh.ref, 'again')))).toBe(true);
  });

  it('tells a running effect that lost its lease, and rejects its late result', async () => {
    const ops = operations({ leaseMs: 150 });
    const takenOver = gate();
    let abortReason: unknown;
    const slow = ops.run('k', { a: 1 }, async (ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      abortReason = ctx.signal.reason;
      await takenOver.promise;
      return 'slow';
    });
    await waitFor(
      'k to be in progress',
      async () => (await ops.get('k'))?.status === 'IN_PROGRESS',
      SOON,
    );
    const fast = await waitFor(
      'a duplicate to take over the expired lease',
      async () => {
        try {
          return await ops.run('k', { a: 1 }, async (ctx) => `fast-${ctx.attempt}`);
        } catch (error) {
          if (isOperationInProgressError(error)) return undefined;
          throw error;
        }
      },
      SOON,
    );
    expect(fast).toBe('fast-2');
    takenOver.open();
    const error = await rejection(slow);
    expect(isLeaseLostError(error)).toBe(true);
    expect(isLeaseLostError(abortReason)).toBe(true);
    expect(await ops.get('k')).toMatchObject({ status: 'SUCCEEDED', response: 'fast-2' });
  });

  it('keeps the reservation while the effect extends its lease', async () => {
    const ops = operations({ leaseMs: 100 });
    const hold = gate();
    const first = ops.run('k', 1, async (ctx) => {
      await ctx.extendLease(10_000);
      await hold.promise;
      return ctx.signal.aborted ? 'aborted' : 'kept';
    });
    await waitFor(
      'the lease to be extended',
      async () => {
        const record = await ops.get('k');
        return record?.leaseUntil !== undefined && record.leaseUntil.getTime() > Date.now() + 5_000;
      },
      SOON,
    );
    // Well past the original 100 ms lease: still in progress, not taken over.
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(isOperationInProgressError(await rejection(ops.run('k', 1, async () => 'x')))).toBe(
      true,
    );
    hold.open();
    await expect(first).resolves.toBe('kept');
  });

  it('treats an expired record as absent', async () => {
    const ops = operations();
    let runs = 0;
    const effect = async () => (runs += 1);
    await expect(ops.run('k', { v: 1 }, effect, { retentionMs: 1 })).resolves.toBe(1);
    await waitFor('the record to expire', async () => (await ops.get('k')) === undefined, SOON);
    // The key runs again, and a different request is not a conflict any more.
    await expect(ops.run('k', { v: 2 }, effect)).resolves.toBe(2);
    expect(await ops.get('k')).toMatchObject({ attempts: 1, status: 'SUCCEEDED', response: 2 });
  });

  it('re-runs after a retriable failure and replays a final one', async () => {
    const ops = operations();
    let runs = 0;
    const flaky = async (ctx: OperationContext) => {
      runs += 1;
      if (ctx.attempt === 1) throw new TransientError('provider timed out');
      return `ok on attempt ${ctx.attempt}`;
    };
    const transient = await rejection(ops.run('r', 1, flaky));
    expect(transient).toBeInstanceOf(TransientError);
    expect(await ops.get('r')).toMatchObject({
      status: 'FAILED_RETRIABLE',
      error: { name: 'TransientError', message: 'provider timed out' },
    });
    await expect(ops.run('r', 1, flaky)).resolves.toBe('ok on attempt 2');
    expect(runs).toBe(2);

    let finalRuns = 0;
    const declined = async () => {
      finalRuns += 1;
      throw new DeclinedError('card declined');
    };
    expect(await rejection(ops.run('f', 1, declined))).toBeInstanceOf(DeclinedError);
    const replay = await rejection(ops.run('f', 1, declined));
    expect(isOperationFailedError(replay)).toBe(true);
    expect(replay).toMatchObject({
      code: 'OPERATION_FAILED',
      failure: { name: 'DeclinedError', message: 'card declined', code: 'CARD_DECLINED' },
    });
    expect(finalRuns).toBe(1);
  });

  it('classifies failures with isRetriable', async () => {
    const ops = operations({ isRetriable: () => false });
    await rejection(ops.run('k', 1, async () => Promise.reject(new TransientError('x'))));
    expect((await ops.get('k'))?.status).toBe('FAILED_FINAL');
  });

  it('runs the effect once for 50 concurrent duplicates; the rest are told it is in progress', async () => {
    const ops = operations();
    const others = { settled: 0 };
    const allOthersSettled = gate();
    let runs = 0;
    const effect = async () => {
      runs += 1;
      // Hold the effect until every duplicate has answered (bounded, in case one never does).
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        allOthersSettled.promise,
        new Promise((resolve) => {
          timer = setTimeout(resolve, 10_000);
        }),
      ]);
      clearTimeout(timer);
      return { id: 'the-one' };
    };
    const calls = Array.from({ length: 50 }, () =>
      ops.run('hot', { q: 1 }, effect).then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => {
          others.settled += 1;
          if (others.settled === 49) allOthersSettled.open();
          return { ok: false as const, error };
        },
      ),
    );
    const results = await Promise.all(calls);
    expect(runs).toBe(1);
    const succeeded = results.filter((r) => r.ok);
    const failed = results.filter((r) => !r.ok);
    expect(succeeded).toEqual([{ ok: true, value: { id: 'the-one' } }]);
    expect(failed).toHaveLength(49);
    expect(failed.every((r) => !r.ok && isOperationInProgressError(r.error))).toBe(true);
  });

  it('runs the effect once for 50 concurrent waiting duplicates; all get the response', async () => {
    const ops = operations({ waitForInProgressMs: 20_000, pollIntervalMs: 10 });
    let runs = 0;
    const effect = async () => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { id: 'the-one' };
    };
    const results = await Promise.all(
      Array.from({ length: 50 }, () => ops.run('hot', { q: 1 }, effect)),
    );
    expect(runs).toBe(1);
    expect(results).toEqual(Array.from({ length: 50 }, () => ({ id: 'the-one' })));
  });

  it('keeps scopes apart', async () => {
    const ops = operations();
    let runs = 0;
    const effect = async (ctx: OperationContext) => `${ctx.scope}:${(runs += 1)}`;
    await expect(ops.run('k', { a: 1 }, effect, { scope: 'tenant-a' })).resolves.toBe('tenant-a:1');
    // Same operation and key, other scope: its own record, even with another request.
    await expect(ops.run('k', { a: 2 }, effect, { scope: 'tenant-b' })).resolves.toBe('tenant-b:2');
    await expect(ops.run('k', { a: 1 }, effect, { scope: 'tenant-a' })).resolves.toBe('tenant-a:1');
    expect(runs).toBe(2);
    expect(await ops.get('k', { scope: 'tenant-c' })).toBeUndefined();
  });

  it('keeps operations apart under one key', async () => {
    const ops = operations();
    const a = await ops.run('k', 1, async () => 'a', { operation: 'refund' });
    const b = await ops.run('k', 2, async () => 'b', { operation: 'capture' });
    expect([a, b]).toEqual(['a', 'b']);
  });

  it('refuses a response larger than maxResponseBytes and never runs the effect again', async () => {
    const ops = operations({ maxResponseBytes: 100 });
    let runs = 0;
    const big = async () => {
      runs += 1;
      return 'x'.repeat(200);
    };
    const error = await rejection(ops.run('k', 1, big));
    expect(isResponseTooLargeError(error)).toBe(true);
    expect(error).toMatchObject({ code: 'RESPONSE_TOO_LARGE', bytes: 202, maxBytes: 100 });
    const replay = await rejection(ops.run('k', 1, big));
    expect(isOperationFailedError(replay)).toBe(true);
    expect(replay).toMatchObject({ failure: { code: 'RESPONSE_TOO_LARGE' } });
    expect(runs).toBe(1);

    // Through the lower-level API the owner keeps the record and may store a smaller answer.
    const reservation = await ops.reserve('k2', 1);
    if (reservation.kind !== 'acquired') throw new Error('expected acquired');
    expect(
      isResponseTooLargeError(await rejection(ops.complete(reservation.ref, 'y'.repeat(200)))),
    ).toBe(true);
    await expect(ops.complete(reservation.ref, { ref: 'blob-1' })).resolves.toEqual({
      ref: 'blob-1',
    });
  });

  it('drives the steps by hand with reserve, complete and fail', async () => {
    const ops = operations();
    const first = await ops.reserve('k', { n: 1 });
    expect(first.kind).toBe('acquired');
    const busy = await ops.reserve('k', { n: 1 });
    expect(busy).toMatchObject({ kind: 'in-progress', attempts: 1 });
    if (first.kind !== 'acquired') throw new Error('expected acquired');
    expect(busy.kind === 'in-progress' && busy.ownerId).toBe(first.ref.ownerId);
    await ops.fail(first.ref, new TransientError('later'), { retriable: true });
    const retry = await ops.reserve('k', { n: 1 });
    if (retry.kind !== 'acquired') throw new Error('expected acquired');
    expect(retry.ref.attempt).toBe(2);
    expect(retry.leaseRemainingMs).toBeGreaterThan(29_000);
    await ops.complete(retry.ref, null);
    expect(await ops.reserve('k', { n: 1 })).toMatchObject({
      kind: 'completed',
      response: null,
      attempts: 2,
    });
  });

  it('stores exactly the columns of seed 004 in the shared table', async () => {
    const ops = operations();
    await ops.run('k', { a: 1 }, async () => ({ ok: 1 }));
    const rows = rowsOf<Record<string, unknown>>(
      await store.knex.raw(
        kind === 'mysql'
          ? `select request_hash, status, owner_id, lease_until, response, attempts,
                    expires_at > current_timestamp(6) as live
               from ${store.names.table('idempotency')} where \`key\` = ? and operation = ?`
          : `select request_hash, status, owner_id, lease_until, response, attempts,
                expires_at > now() as live
           from ${store.names.table('idempotency')} where key = ? and operation = ?`,
        ['k', `op-${sequence}`],
      ),
    );
    expect(rows).toHaveLength(1);
    // MySQL keeps the response as text (longtext) and answers truth values as 1 and 0.
    expect(rows[0]).toMatchObject({
      status: 'SUCCEEDED',
      lease_until: null,
      response: kind === 'mysql' ? '{"ok":1}' : { ok: 1 },
      attempts: 1,
      live: kind === 'mysql' ? 1 : true,
    });
    expect(rows[0]?.request_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses bad keys and missing names with a typed error, writing nothing', async () => {
    const ops = operations({ maxKeyLength: 10 });
    for (const key of ['', 'x'.repeat(11)]) {
      const error = await rejection(ops.run(key, 1, async () => 1));
      expect(error).toMatchObject({ code: 'INVALID_OPERATION_INPUT' });
    }
    const nameless = createOperations({ store });
    expect(await rejection(nameless.run('k', 1, async () => 1))).toMatchObject({
      code: 'INVALID_OPERATION_INPUT',
    });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(await rejection(ops.run('k', cyclic, async () => 1))).toMatchObject({
      code: 'INVALID_OPERATION_INPUT',
    });
    expect(await ops.get('k')).toBeUndefined();
  });
});

describe.each(ALL_STORE_KINDS)('operations with text PostgreSQL cannot store on %s', (kind) => {
  let store: TestStore;
  let sequence = 0;
  const operations = (options: Omit<OperationsOptions, 'store'> = {}): Operations =>
    createOperations({ store, operation: `text-${(sequence += 1)}`, ...options });
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('replays the response byte for byte: key order, U+0000 and lone surrogates kept', async () => {
    const ops = operations();
    const response = {
      chargeId: 'ch_1',
      at: '2026-01-02T03:04:05.000Z',
      nested: { ok: true, n: 1 },
      odd: ['\u0000', '\ud800', 'x\udc00y', '\ud83d\ude00'],
      '\u0000key': null,
    };
    const first = await ops.run('k', 1, async () => response);
    const replayed = await ops.run('k', 1, async () => 'never');
    expect(JSON.stringify(first)).toBe(JSON.stringify(response));
    expect(JSON.stringify(replayed)).toBe(JSON.stringify(response));
    expect(JSON.stringify((await ops.get('k'))?.response)).toBe(JSON.stringify(response));
    // A null response is a stored response too.
    await ops.run('null', 1, async () => null);
    expect(await ops.get('null')).toMatchObject({ status: 'SUCCEEDED', response: null });
  });

  it('records an error whose text holds U+0000 or lone surrogates, storably', async () => {
    const ops = operations({ isRetriable: () => false });
    const thrown = Object.assign(new Error('bad \u0000 \ud800'), { code: 'E\u0000' });
    expect(await rejection(ops.run('k', 1, async () => Promise.reject(thrown)))).toBe(thrown);
    const replay = await rejection(ops.run('k', 1, async () => 'never'));
    expect(isOperationFailedError(replay)).toBe(true);
    expect(replay).toMatchObject({
      failure: { name: 'Error', message: 'bad \\u0000 \ufffd', code: 'E\\u0000' },
    });
    // Anything thrown is recorded, even what String() cannot print.
    const odd = Object.create(null) as object;
    expect(await rejection(ops.run('odd', 1, async () => Promise.reject(odd)))).toBe(odd);
    expect(await ops.get('odd')).toMatchObject({ status: 'FAILED_FINAL' });
  });

  it('refuses keys, names, requests and options it cannot use with a typed error', async () => {
    const ops = operations();
    const throwing = {
      toJSON(): never {
        throw new Error('nope');
      },
    };
    const calls: Array<() => Promise<unknown>> = [
      () => ops.run('k\u0000', 1, async () => 1),
      () => ops.run('\ud800', 1, async () => 1),
      () => ops.run(null as never, 1, async () => 1),
      () => ops.run('k', 1, async () => 1, { scope: 's\u0000' }),
      () => ops.run('k', 1, async () => 1, { operation: '\udc00' }),
      () => ops.run('k', 1, async () => 1, 5 as never),
      () => ops.run('k', 1, async () => 1, { signal: 'abort' as never }),
      () => ops.run('k', throwing, async () => 1),
      () => ops.reserve('k', 1, 'x' as never),
      () => ops.get('k\u0000'),
      () => ops.complete(null as never, 1),
      () =>
        ops.fail({ scope: 's', operation: 'o', key: 'k' } as never, new Error('x'), {
          retriable: false,
        }),
      () => ops.extendLease({} as never),
    ];
    for (const call of calls) {
      expect(await rejection(call())).toMatchObject({ code: 'INVALID_OPERATION_INPUT' });
    }
    // A request is only hashed: U+0000 and lone surrogates in it are fine.
    await expect(ops.run('k', { s: '\u0000\ud800' }, async () => 'ok')).resolves.toBe('ok');
    await expect(ops.run('k', { s: '\u0000\ud800' }, async () => 'never')).resolves.toBe('ok');
  });
});

describe('operations configuration', () => {
  const store = { knex: () => undefined } as unknown as OperationsOptions['store'];
  it.each([
    ['leaseMs', { leaseMs: 0 }],
    ['leaseMs', { leaseMs: Number.NaN }],
    ['waitForInProgressMs', { waitForInProgressMs: -1 }],
    ['pollIntervalMs', { pollIntervalMs: 0 }],
    ['retentionMs', { retentionMs: 0 }],
    ['maxResponseBytes', { maxResponseBytes: 1.5 }],
    ['operation', { operation: '' }],
    ['scope', { scope: 'x'.repeat(201) }],
  ])('refuses an invalid %s at construction', (_name, options) => {
    let caught: unknown;
    try {
      createOperations({ store, ...options });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(JustonceError);
    expect(caught).toMatchObject({ code: 'INVALID_CONFIG' });
  });

  it('refuses a missing store', () => {
    expect(() => createOperations({} as OperationsOptions)).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
  });
});
