import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  ConfigurationError,
  createAdmin,
  createInbox,
  createOperations,
  createOutbox,
  observeStoreStatus,
  type Admin,
  type Logger,
  type StoreStatus,
} from '../src';
import { openTestStore } from './db';
import { envelope, freshId } from './fixtures/inbox-support';
import { collect, TestReader } from './fixtures/metric-reader';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

describe('observeStoreStatus (OpenTelemetry gauges)', () => {
  let store: TestStore;
  let admin: Admin;
  let provider: MeterProvider;
  let reader: TestReader;

  beforeAll(async () => {
    store = await openTestStore('pglite');
    admin = createAdmin(store);
    // Data made by the real APIs: two pending events, a dead letter, an operation past its lease.
    await store.knex.transaction((trx) =>
      createOutbox({ store }).add(trx, [
        { destination: 'orders', payload: 1 },
        { destination: 'orders', payload: 2 },
      ]),
    );
    await createInbox({ store, consumer: 'billing', maxAttempts: 1 }).process(
      envelope(freshId()),
      () => Promise.reject(new Error('down')),
    );
    const dying = createOperations({ store, operation: 'charge', leaseMs: 10 });
    await dying.reserve('k', { v: 1 });
    await new Promise((resolve) => setTimeout(resolve, 30));
  });
  beforeEach(() => {
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
  });
  afterEach(async () => {
    await provider.shutdown();
  });
  afterAll(async () => {
    await store.dispose();
  });

  it('reports the status figures as gauges, reading the store at most once per refreshMs', async () => {
    let reads = 0;
    // refreshMs is long: the three collections below share one read.
    const counting: Admin = {
      ...admin,
      status: () => {
        reads += 1;
        return admin.status();
      },
    };
    const gauges = observeStoreStatus(counting, {
      meter: provider.getMeter('test'),
      refreshMs: 60_000,
    });
    const points = await collect(reader);
    expect(points).toMatchObject({
      'justonce.outbox.pending{destination=orders}': 2,
      'justonce.outbox.dead{destination=orders}': 0,
      'justonce.dead_letters.waiting{consumer=billing,reason=MAX_ATTEMPTS}': 1,
      'justonce.operations.past_lease{operation=charge}': 1,
      'justonce.operations.in_progress{operation=charge}': 0,
    });
    expect(points['justonce.outbox.oldest_pending_age{destination=orders}']).toBeGreaterThanOrEqual(
      0,
    );
    await collect(reader);
    await collect(reader);
    expect(reads).toBe(1);
    gauges.stop();
    gauges.stop();
    // Stopped: no callback runs any more (the SDK may still export the last cumulative value).
    await collect(reader);
    expect(reads).toBe(1);
  });

  it('keeps the last figures when a read fails, logs it, and never throws into the SDK', async () => {
    const warnings: string[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (message) => warnings.push(message),
      error: (message) => warnings.push(message),
    };
    let fail = false;
    let reads = 0;
    const flaky: Admin = {
      ...admin,
      status: (): Promise<StoreStatus> => {
        reads += 1;
        return fail ? Promise.reject(new Error('database down')) : admin.status();
      },
    };
    const gauges = observeStoreStatus(flaky, {
      meter: provider.getMeter('test'),
      refreshMs: 0,
      logger,
    });
    const first = await collect(reader);
    fail = true;
    const second = await collect(reader);
    expect(reads).toBe(2);
    expect(second).toEqual(first);
    expect(warnings).toEqual([expect.stringContaining('reading the store status failed')]);
    gauges.stop();
  });

  it('refuses bad options', () => {
    expect(() => observeStoreStatus(admin, { refreshMs: -1 })).toThrow(ConfigurationError);
    expect(() => observeStoreStatus(admin, { refresh: 1 } as never)).toThrow(
      /unknown option `refresh`; did you mean `refreshMs`\?/,
    );
    expect(() => observeStoreStatus({} as Admin)).toThrow(/needs an admin/);
  });
});
