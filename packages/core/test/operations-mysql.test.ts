/**
 * What is MySQL's and MariaDB's own in idempotent operations: the lease is measured on the
 * database's clock (`current_timestamp(6)`), to the microsecond, whatever the processes'
 * clocks say; a reservation is an `insert … on duplicate key update` whose race for one key
 * has one winner; names are compared byte for byte.
 */
import { createOperations, rowsOf, type Operations, type Reservation } from '../src';
import { waitFor } from '../../../test-support/wait-for';
import { openTestStore } from './db';
import { rejection } from './fixtures/gate';
import { TransientError } from './fixtures/operations-support';
import { createOrdersTable, insertOrder, ordersOf } from './fixtures/orders-support';
import { watchStatements } from './fixtures/statements';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

/** Runs `call` as a process whose clock is `skewMs` off: `Date.now` and `new Date()`. */
async function withClockSkew<T>(skewMs: number, call: () => Promise<T>): Promise<T> {
  const realNow = Date.now.bind(Date);
  const spy = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs);
  try {
    return await call();
  } finally {
    spy.mockRestore();
  }
}

function acquired(reservation: Reservation): Extract<Reservation, { kind: 'acquired' }> {
  if (reservation.kind !== 'acquired')
    throw new Error(`expected acquired, got ${reservation.kind}`);
  return reservation;
}

describe('idempotent operations on MySQL and MariaDB', () => {
  /** Two stores, as two processes have: each its own pool and its own grouped statements. */
  let one: TestStore;
  let two: TestStore;
  let sequence = 0;
  const name = (): string => `mysql-${(sequence += 1)}`;

  beforeAll(async () => {
    one = await openTestStore('mysql');
    two = await openTestStore('mysql', { schema: one.names.schema.replace(/`/g, '') });
    await createOrdersTable(one);
  });
  afterAll(async () => {
    await two.close();
    await one.dispose();
  });

  /** The stored lease and what the database says of it, to the microsecond. */
  async function stored(operation: string, key: string) {
    const rows = rowsOf<{ owner_id: string; lease_us: number | string; updated_at: Date }>(
      await one.knex.raw(
        `select owner_id, updated_at,
                timestampdiff(microsecond, updated_at, lease_until) as lease_us
           from ${one.names.table('idempotency')} where operation = ? and \`key\` = ?`,
        [operation, key],
      ),
    );
    const row = rows[0];
    if (row === undefined) throw new Error(`no record ${operation}/${key}`);
    return { ownerId: row.owner_id, leaseUs: Number(row.lease_us), updatedAt: row.updated_at };
  }

  it('measures the lease on the database clock: processes with skewed clocks agree', async () => {
    const operation = name();
    const leaseMs = 1_500;
    const early = createOperations({ store: one, operation, leaseMs });
    const late = createOperations({ store: two, operation, leaseMs });
    // The first process's clock is an hour fast: a lease on its own clock would be over.
    const first = acquired(await withClockSkew(3_600_000, () => early.reserve('k', 1)));
    expect(first.leaseRemainingMs).toBe(leaseMs);
    expect((await stored(operation, 'k')).leaseUs).toBe(leaseMs * 1000);
    // The second, an hour slow and an hour fast: both see the same live lease and its owner.
    for (const skew of [-3_600_000, 3_600_000]) {
      const busy = await withClockSkew(skew, () => late.reserve('k', 1));
      expect(busy).toMatchObject({
        kind: 'in-progress',
        ownerId: first.ref.ownerId,
        leaseUntil: first.leaseUntil,
      });
    }
    // Once the database's clock passes the lease, exactly then, another owner takes over.
    const next = await waitFor('the lease to run out on the database clock', async () => {
      const r = await withClockSkew(-3_600_000, () => late.reserve('k', 1));
      return r.kind === 'acquired' ? r : undefined;
    });
    expect(next.ref.attempt).toBe(2);
    const taken = await stored(operation, 'k');
    expect(taken.ownerId).toBe(next.ref.ownerId);
    expect(taken.updatedAt.getTime()).toBeGreaterThanOrEqual(first.leaseUntil.getTime());
    // The first owner is fenced off whatever its clock says.
    await expect(
      withClockSkew(-3_600_000, () => early.complete(first.ref, 'stale')),
    ).rejects.toMatchObject({ code: 'LEASE_LOST', currentOwnerId: next.ref.ownerId });
  });

  it('keeps lease_until to the microsecond', async () => {
    const operation = name();
    const ops = createOperations({ store: one, operation, leaseMs: 1_500.25 });
    const reservation = acquired(await ops.reserve('k', 1));
    expect((await stored(operation, 'k')).leaseUs).toBe(1_500_250);
    await ops.extendLease(reservation.ref, 2_000.125);
    expect((await stored(operation, 'k')).leaseUs).toBe(2_000_125);
    // JavaScript's dates hold milliseconds: the record's lease is the stored one, truncated.
    const rows = rowsOf<{ micros: number | string }>(
      await one.knex.raw(
        `select microsecond(lease_until) as micros from ${one.names.table('idempotency')}
          where operation = ? and \`key\` = ?`,
        [operation, 'k'],
      ),
    );
    const leaseUntil = (await ops.get('k'))?.leaseUntil;
    expect(leaseUntil?.getUTCMilliseconds()).toBe(Math.floor(Number(rows[0]?.micros) / 1000));
  });

  it('gives a key one owner when callers of several processes reserve it at once', async () => {
    const operation = name();
    const callers: Operations[] = [];
    for (let i = 0; i < 6; i += 1) {
      callers.push(createOperations({ store: i % 2 === 0 ? one : two, operation }));
    }
    const race = async (): Promise<Reservation[]> =>
      Promise.all(
        callers.flatMap((ops) => Array.from({ length: 5 }, () => ops.reserve('hot', { q: 1 }))),
      );
    const first = await race();
    const winners = first.filter((r) => r.kind === 'acquired');
    expect(winners).toHaveLength(1);
    const owner = acquired(winners[0]!).ref.ownerId;
    expect(first.filter((r) => r.kind === 'in-progress').every((r) => r.ownerId === owner)).toBe(
      true,
    );
    expect((await stored(operation, 'hot')).ownerId).toBe(owner);
    // When its lease has run out, the race to take it over has one winner too. The leases
    // are long, so that no winner's runs out during a race: this one is ended by hand.
    await one.knex.raw(
      `update ${one.names.table('idempotency')}
          set lease_until = current_timestamp(6) - interval 1 second where operation = ?`,
      [operation],
    );
    const second = await race();
    const taken = second.filter((r) => r.kind === 'acquired');
    expect(taken).toHaveLength(1);
    const next = acquired(taken[0]!);
    expect(next.ref.attempt).toBe(2);
    expect((await stored(operation, 'hot')).ownerId).toBe(next.ref.ownerId);
  });

  it('finalizes grouped calls by owner: the fenced-off ones match nothing', async () => {
    const operation = name();
    const ops = createOperations({ store: one, operation });
    const keys = Array.from({ length: 12 }, (_, i) => `g-${i}`);
    const refs = await Promise.all(
      keys.map(async (key) => acquired(await ops.reserve(key, 1)).ref),
    );
    // Every other lease ends and another process takes the record over.
    const stale = keys.filter((_, i) => i % 2 === 1);
    await one.knex.raw(
      `update ${one.names.table('idempotency')}
          set lease_until = current_timestamp(6) - interval 1 second
        where operation = ? and \`key\` in (${stale.map(() => '?').join(', ')})`,
      [operation, ...stale],
    );
    const other = createOperations({ store: two, operation });
    const takers = await Promise.all(
      stale.map(async (key) => acquired(await other.reserve(key, 1))),
    );
    let grouped = 0;
    const stop = watchStatements(one.knex, (sql) => {
      if (/set status = case owner_id/.test(sql)) grouped += 1;
    });
    const settled = await Promise.allSettled(refs.map((ref) => ops.complete(ref, ref.key)));
    stop();
    expect(grouped).toBeGreaterThan(0);
    settled.forEach((result, i) => {
      if (i % 2 === 0) expect(result).toEqual({ status: 'fulfilled', value: keys[i] });
      else expect(result).toMatchObject({ status: 'rejected', reason: { code: 'LEASE_LOST' } });
    });
    for (const taker of takers) {
      expect(await ops.get(taker.ref.key)).toMatchObject({
        status: 'IN_PROGRESS',
        ownerId: taker.ref.ownerId,
      });
    }
  });

  it('holds keys of maxKeyLength in 3-byte characters, and refuses a longer maxKeyLength', async () => {
    expect(() => createOperations({ store: one, operation: name(), maxKeyLength: 341 })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
    const ops = createOperations({ store: one, operation: name(), maxKeyLength: 340 });
    const key = '\u20ac'.repeat(340);
    await expect(ops.run(key, 1, async () => 'stored')).resolves.toBe('stored');
    expect(await ops.get(key)).toMatchObject({ key, status: 'SUCCEEDED' });
  });

  it('keeps keys apart that differ in case or trailing spaces', async () => {
    const ops = createOperations({ store: one, operation: name() });
    const keys = ['k', 'k ', 'K', 'k\t', '\u00e9', 'e\u0301'];
    for (const key of keys) await ops.run(key, 1, async () => `ran ${JSON.stringify(key)}`);
    for (const key of keys) {
      expect(await ops.get(key)).toMatchObject({ key, response: `ran ${JSON.stringify(key)}` });
    }
  });

  it('commits the business row with SUCCEEDED, or rolls both back and records the failure', async () => {
    const ops = createOperations({ store: one, operation: name() });
    let runs = 0;
    const order = await ops.runInTransaction('ok', 1, (trx, ctx) => {
      runs += 1;
      return insertOrder(trx, one, ctx, 1);
    });
    await expect(ops.runInTransaction('ok', 1, async () => 'never')).resolves.toEqual(order);
    expect(runs).toBe(1);
    expect(await ordersOf(one, 'ok')).toEqual([order.orderId]);
    const failure = new TransientError('stock service timed out');
    const failed = await rejection(
      ops.runInTransaction('retry', 1, async (trx, ctx) => {
        await insertOrder(trx, one, ctx, 2);
        throw failure;
      }),
    );
    expect(failed).toBe(failure);
    expect(await ordersOf(one, 'retry')).toEqual([]);
    expect(await ops.get('retry')).toMatchObject({ status: 'FAILED_RETRIABLE' });
    const second = await ops.runInTransaction('retry', 1, (trx, ctx) =>
      insertOrder(trx, one, ctx, 2),
    );
    expect(second.attempt).toBe(2);
    expect(await ordersOf(one, 'retry')).toEqual([second.orderId]);
  });

  it('rolls the business row back when the lease was lost before the commit', async () => {
    const operation = name();
    const ops = createOperations({ store: one, operation, leaseMs: 200 });
    const other = createOperations({ store: two, operation, leaseMs: 60_000 });
    let thief: Reservation | undefined;
    const error = await rejection(
      ops.runInTransaction('k', 1, async (trx, ctx) => {
        const placed = await insertOrder(trx, one, ctx, 1);
        thief = await waitFor('another process to take the lapsed lease', async () => {
          const r = await other.reserve('k', 1);
          return r.kind === 'acquired' ? r : undefined;
        });
        return placed;
      }),
    );
    expect(error).toMatchObject({
      code: 'LEASE_LOST',
      currentOwnerId: acquired(thief!).ref.ownerId,
    });
    expect(await ordersOf(one, 'k')).toEqual([]);
    expect(await ops.get('k')).toMatchObject({ status: 'IN_PROGRESS', attempts: 2 });
  });
});
