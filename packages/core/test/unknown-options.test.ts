import { metrics, type Meter } from '@opentelemetry/api';
import {
  ConfigurationError,
  createAdmin,
  createCircuitBreaker,
  createInbox,
  createKnexMigrationSource,
  createManualClock,
  createMemoryPublisher,
  createOperations,
  createOutbox,
  createRelay,
  createRetention,
  createRetryBudget,
  createRetryQuota,
  createStore,
  knexTransactions,
  observeStoreStatus,
  resolveMeter,
  retryPolicy,
  silentLogger,
  type CircuitBreakerOptions,
  type InboxOptions,
  type OperationsOptions,
  type OutboxOptions,
  type RelayOptions,
  type RetentionOptions,
  type RetryBudgetOptions,
  type RetryPolicyOptions,
  type RetryQuotaOptions,
  type Store,
} from '../src';
import {
  checkPublisherContract,
  createMemoryBroker,
  createTestHarness,
  type MemoryBrokerOptions,
  type PublisherContractOptions,
  type TestHarnessOptions,
} from '../src/testing';

/**
 * Every public factory refuses an option its interface does not declare, naming it and the
 * closest known one, and still takes every option it documents. The "every option" objects
 * are typed `Required<...>`, so an option added to an interface must be added here too.
 */

/** The configuration error `run` throws (or its promise rejects with). */
async function refusal(run: () => unknown): Promise<ConfigurationError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ConfigurationError) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

/** The message part naming `key` and suggesting `suggestion`. */
const named = (key: string, suggestion: string): string =>
  `unknown option \`${key}\`; did you mean \`${suggestion}\`?`;

const meter = metrics.getMeter('unknown-options-test');

let store: Store;

beforeAll(async () => {
  // Construction never touches the database; a lazily connecting store is enough.
  store = await createStore({ connectionString: 'postgres://127.0.0.1:1/none' });
});

afterAll(async () => {
  await store.close();
});

/** Bypasses the option types, as a JavaScript caller (or a cast) would. */
function loose<T>(options: Record<string, unknown>): T {
  return options as T;
}

function allInboxOptions(): Required<InboxOptions> {
  return {
    store,
    transactions: knexTransactions(store.knex),
    consumer: 'c',
    defaultScope: 'tenant-a',
    maxAttempts: 3,
    maxIdLength: 100,
    fingerprintHeaders: ['content-type'],
    outbox: createOutbox({ store }),
    ledger: createOperations({ store }),
    decode: (body) => body,
    retentionMs: 60_000,
    redeliveryHorizonMs: 30_000,
    onStep: () => undefined,
    logger: silentLogger,
    meter,
    logPayloads: false,
    alwaysCountAttempts: true,
    backoff: { baseMs: 10, capMs: 100, random: () => 0.5 },
    classify: () => undefined,
    activityFlushMs: 5_000,
    dedup: 'watermark+ids',
    idRetentionMs: 30_000,
  };
}

/** Every option of the polling mode (the log mode's own are in relay-log-options.test.ts). */
function allRelayOptions(): Required<Omit<RelayOptions, 'log'>> {
  return {
    store,
    mode: 'poll',
    publisher: createMemoryPublisher(),
    batchSize: 10,
    concurrency: 2,
    maxConcurrentPublishes: 2,
    maxAttempts: 3,
    backoff: { baseMs: 100, capMs: 1_000 },
    leaseMs: 30_000,
    claimHoldMs: 1_000,
    publishTimeoutMs: 5_000,
    pollIntervalMs: 1_000,
    notify: false,
    onPublished: 'keep',
    claim: 'batch',
    ownerId: 'relay-1',
    logger: silentLogger,
    meter,
  };
}

function allBrokerOptions(): Required<MemoryBrokerOptions> {
  return {
    seed: 3,
    faults: { duplicateRate: 0.1, concurrentRate: 0.1, crashRate: 0.1 },
    crashRedeliveryDelayMs: 1,
    maxRetryDelayMs: 10,
    maxReceiveCount: 20,
  };
}

describe('createStore', () => {
  it('refuses a misspelt option, and one of pool or pglite, with a suggestion', async () => {
    const top = await refusal(() =>
      createStore(loose({ connectionstring: 'postgres://127.0.0.1:1/none' })),
    );
    expect(top.message).toContain(named('connectionstring', 'connectionString'));
    const pool = await refusal(() =>
      createStore({ connectionString: 'postgres://x/y', pool: loose({ mx: 3 }) }),
    );
    expect(pool.message).toContain(named('pool.mx', 'pool.max'));
    const pglite = await refusal(() => createStore({ pglite: loose({ datadir: '/tmp/x' }) }));
    expect(pglite.message).toContain(named('pglite.datadir', 'pglite.dataDir'));
  });

  it('takes every option it documents (one connection option at a time)', async () => {
    const pg = await createStore({
      connectionString: 'postgres://127.0.0.1:1/none',
      pool: { min: 0, max: 2 },
      schema: 'some_schema',
      tablePrefix: 'p_',
      preparedStatements: false,
    });
    await pg.close();
    const borrowed = await createStore({ knex: store.knex });
    await borrowed.close();
    const embedded = await createStore({ pglite: { dataDir: undefined } });
    await embedded.close();
  });
});

describe('createKnexMigrationSource', () => {
  it('refuses a misspelt option and takes every documented one', async () => {
    const error = await refusal(() => createKnexMigrationSource(loose({ tableprefix: 'x_' })));
    expect(error.message).toContain(named('tableprefix', 'tablePrefix'));
    expect(() => createKnexMigrationSource({ schema: 's', tablePrefix: 'p_' })).not.toThrow();
  });
});

describe('createInbox', () => {
  it('refuses a misspelt option, naming it and the closest known one', async () => {
    const error = await refusal(() =>
      createInbox(loose<InboxOptions>({ store, consumer: 'c', maxAttempt: 3 })),
    );
    expect(error.message).toBe(`createInbox: ${named('maxAttempt', 'maxAttempts')}`);
    expect(error.details).toEqual({
      unknown: ['maxAttempt'],
      didYouMean: { maxAttempt: 'maxAttempts' },
    });
  });

  it('refuses a misspelt backoff option with its path', async () => {
    const error = await refusal(() =>
      createInbox({ store, consumer: 'c', backoff: loose({ capms: 10 }) }),
    );
    expect(error.message).toContain(named('backoff.capms', 'backoff.capMs'));
  });

  it('takes every option it documents', () => {
    expect(createInbox(allInboxOptions()).consumer).toBe('c');
  });
});

describe('createOutbox', () => {
  it('refuses a misspelt option, before it looks for the store', async () => {
    const error = await refusal(() => createOutbox(loose<OutboxOptions>({ store, notfiy: false })));
    expect(error.message).toContain(named('notfiy', 'notify'));
    const noStore = await refusal(() => createOutbox(loose<OutboxOptions>({ stor: store })));
    expect(noStore.message).toContain(named('stor', 'store'));
  });

  it('takes every option it documents', () => {
    const all: Required<OutboxOptions> = {
      store,
      transactions: knexTransactions(store.knex),
      notify: false,
      maxKeyLength: 100,
      maxDestinationLength: 100,
      maxMessageIdLength: 100,
      maxPayloadBytes: 1_000,
    };
    expect(typeof createOutbox(all).add).toBe('function');
  });
});

describe('createRelay', () => {
  it('refuses a misspelt option and a misspelt backoff option', async () => {
    const publisher = createMemoryPublisher();
    const top = await refusal(() => createRelay(loose({ store, publisher, batchsize: 10 })));
    expect(top.message).toContain(named('batchsize', 'batchSize'));
    const nested = await refusal(() =>
      createRelay({ store, publisher, backoff: loose({ basems: 10 }) }),
    );
    expect(nested.message).toBe(`createRelay: ${named('backoff.basems', 'backoff.baseMs')}`);
  });

  it('takes every option it documents', () => {
    expect(createRelay(allRelayOptions()).ownerId).toBe('relay-1');
  });
});

describe('createOperations', () => {
  it('refuses a misspelt option', async () => {
    const error = await refusal(() =>
      createOperations(loose<OperationsOptions>({ store, operation: 'charge', leaseMS: 1_000 })),
    );
    expect(error.message).toContain(named('leaseMS', 'leaseMs'));
  });

  it('takes every option it documents', () => {
    const all: Required<OperationsOptions> = {
      store,
      transactions: knexTransactions(store.knex),
      operation: 'charge',
      scope: 'tenant-a',
      leaseMs: 10_000,
      waitForInProgressMs: 100,
      pollIntervalMs: 10,
      retentionMs: 60_000,
      maxResponseBytes: 1_000,
      maxKeyLength: 100,
      isRetriable: () => true,
      logger: silentLogger,
      meter,
    };
    expect(typeof createOperations(all).run).toBe('function');
  });
});

describe('createRetention', () => {
  it('refuses a misspelt option', async () => {
    const error = await refusal(() => createRetention(loose({ store, batchsize: 10 })));
    expect(error.message).toContain(named('batchsize', 'batchSize'));
  });

  it('takes every option it documents', () => {
    const all: Required<RetentionOptions> = {
      store,
      retentionMs: 60_000,
      redeliveryHorizonMs: 30_000,
      deadLetterRetentionMs: 60_000,
      batchSize: 10,
      maxBatchesPerRun: 2,
      pauseBetweenBatchesMs: 0,
      onBatch: () => undefined,
      logger: silentLogger,
      meter,
    };
    expect(createRetention(all).retentionMs).toBe(60_000);
  });
});

describe('retry policy factories', () => {
  it('retryPolicy refuses a misspelt option, and one of a quota, budget or breaker given as options', async () => {
    const cases: Array<[RetryPolicyOptions, string]> = [
      [loose({ maxattempts: 3 }), named('maxattempts', 'maxAttempts')],
      [{ quota: loose({ capacty: 5 }) }, named('quota.capacty', 'quota.capacity')],
      [{ budget: loose({ ratoi: 0.1 }) }, named('budget.ratoi', 'budget.ratio')],
      [
        { circuitBreaker: loose({ openms: 5 }) },
        named('circuitBreaker.openms', 'circuitBreaker.openMs'),
      ],
      [
        { circuitBreaker: { trip: loose({ failureratio: 0.5 }) } },
        named('circuitBreaker.trip.failureratio', 'circuitBreaker.trip.failureRatio'),
      ],
      [
        { circuitBreaker: { trip: loose({ failureRatio: 0.5, minimumcalls: 5 }) } },
        named('circuitBreaker.trip.minimumcalls', 'circuitBreaker.trip.minimumCalls'),
      ],
    ];
    for (const [options, message] of cases) {
      expect((await refusal(() => retryPolicy(options))).message).toBe(`retryPolicy: ${message}`);
    }
    // `with` builds a new policy from the same options: it checks its overrides too.
    const withError = await refusal(() => retryPolicy().with(loose({ basedelayms: 5 })));
    expect(withError.message).toContain(named('basedelayms', 'baseDelayMs'));
  });

  it('the quota, budget and breaker factories refuse misspelt options', async () => {
    expect((await refusal(() => createRetryQuota(loose({ retrycost: 1 })))).message).toBe(
      `createRetryQuota: ${named('retrycost', 'retryCost')}`,
    );
    expect((await refusal(() => createRetryBudget(loose({ windowMS: 100 })))).message).toBe(
      `createRetryBudget: ${named('windowMS', 'windowMs')}`,
    );
    const trip = await refusal(() =>
      createCircuitBreaker({ trip: loose({ consecutiveFailures: 2, windowMs: 100 }) }),
    );
    // A consecutive-failures trip has no window: the key belongs to the other kind.
    expect(trip.message).toBe('createCircuitBreaker: unknown option `trip.windowMs`');
  });

  it('every factory takes every option it documents', () => {
    const clock = createManualClock();
    const quota: Required<RetryQuotaOptions> = {
      capacity: 100,
      retryCost: 5,
      timeoutRetryCost: 10,
      successIncrement: 1,
    };
    const budget: Required<RetryBudgetOptions> = {
      ratio: 0.2,
      minRetriesPerSecond: 1,
      windowMs: 1_000,
      clock,
    };
    const breaker: Required<CircuitBreakerOptions> = {
      trip: { failureRatio: 0.5, minimumCalls: 5, windowMs: 1_000 },
      openMs: 1_000,
      clock,
    };
    const all: Required<RetryPolicyOptions> = {
      maxAttempts: 3,
      baseDelayMs: 10,
      throttlingBaseDelayMs: 50,
      maxDelayMs: 1_000,
      deadlineMs: 10_000,
      attemptTimeoutMs: 1_000,
      classify: () => undefined,
      defaultErrorClass: 'transient',
      quota,
      budget,
      circuitBreaker: breaker,
      clock,
      random: () => 0.5,
      dangerouslyDisableJitter: false,
    };
    expect(retryPolicy(all).settings.maxAttempts).toBe(3);
    expect(createRetryQuota(quota).available).toBe(100);
    expect(typeof createRetryBudget(budget).available).toBe('function');
    expect(createCircuitBreaker(breaker).state).toBe('closed');
    expect(createCircuitBreaker({ trip: { consecutiveFailures: 2 } }).state).toBe('closed');
  });
});

describe('createMemoryPublisher', () => {
  it('refuses a misspelt option and takes its one option', async () => {
    const error = await refusal(() => createMemoryPublisher(loose({ delayMS: 1 })));
    expect(error.message).toContain(named('delayMS', 'delayMs'));
    expect(createMemoryPublisher({ delayMs: 1 }).calls).toBe(0);
  });
});

describe('testing kit', () => {
  it('createMemoryBroker refuses a misspelt option and a misspelt fault rate', async () => {
    const top = await refusal(() => createMemoryBroker(loose({ maxReceiveCnt: 3 })));
    expect(top.message).toContain(named('maxReceiveCnt', 'maxReceiveCount'));
    const faults = await refusal(() => createMemoryBroker({ faults: loose({ crashrate: 0.1 }) }));
    expect(faults.message).toContain(named('faults.crashrate', 'faults.crashRate'));
  });

  it('createMemoryBroker takes every option it documents', async () => {
    const broker = createMemoryBroker(allBrokerOptions());
    await broker.close();
  });

  it('createTestHarness refuses misspelt options, in its inbox and broker options too', async () => {
    const handler = async (): Promise<void> => undefined;
    const cases: Array<[TestHarnessOptions, string]> = [
      [loose({ handler, idleTimeout: 5 }), named('idleTimeout', 'idleTimeoutMs')],
      [
        { handler, inbox: loose({ maxattempts: 2 }) },
        named('inbox.maxattempts', 'inbox.maxAttempts'),
      ],
      [
        { handler, inbox: { backoff: loose({ basems: 1 }) } },
        named('inbox.backoff.basems', 'inbox.backoff.baseMs'),
      ],
      [{ handler, inbox: loose({ consumer: 'x' }) }, 'unknown option `inbox.consumer`'],
      [{ handler, broker: loose({ sed: 1 }) }, named('broker.sed', 'broker.seed')],
      [
        { handler, broker: { faults: loose({ duplicaterate: 0.1 }) } },
        named('broker.faults.duplicaterate', 'broker.faults.duplicateRate'),
      ],
    ];
    for (const [options, message] of cases) {
      expect((await refusal(() => createTestHarness(options))).message).toContain(message);
    }
  });

  it('createTestHarness takes every option it documents', async () => {
    const all: Required<TestHarnessOptions> = {
      handler: async () => undefined,
      consumer: 'harness',
      queue: 'harness-queue',
      store,
      setup: async () => undefined,
      inbox: { maxAttempts: 2, backoff: { baseMs: 1, capMs: 10 } },
      concurrency: 2,
      broker: allBrokerOptions(),
      countEffects: async () => 0,
      idleTimeoutMs: 1_000,
    };
    const harness = await createTestHarness(all);
    expect(harness.queue).toBe('harness-queue');
    await harness.close();
  });

  it('checkPublisherContract refuses a misspelt option and takes every documented one', async () => {
    const publisher = createMemoryPublisher();
    const receive: PublisherContractOptions['receive'] = async (destination, count) =>
      publisher.published
        .filter((m) => m.destination === destination)
        .slice(0, count)
        .map((m) => ({
          messageId: m.messageId,
          key: m.key,
          headers: m.headers,
          payload: m.payload,
        }));
    const error = await refusal(() =>
      checkPublisherContract(loose({ publisher, destination: 'q', receive, orderByKey: true })),
    );
    expect(error.message).toContain(named('orderByKey', 'ordersByKey'));
    const all: Required<PublisherContractOptions> = {
      publisher,
      destination: 'q',
      receive,
      invalidDestination: 'bad',
      ordersByKey: true,
    };
    await expect(checkPublisherContract(all)).resolves.toEqual(expect.any(Array));
  });
});

describe('options that are not an object', () => {
  it('are refused with a ConfigurationError by every factory, never met with a TypeError', async () => {
    const call = (f: unknown, value: unknown) => () => (f as (options: unknown) => unknown)(value);
    const needOptions = {
      createInbox,
      createOutbox,
      createRelay,
      createOperations,
      createRetention,
      createTestHarness,
      checkPublisherContract,
    };
    const haveDefaults = {
      createStore,
      createKnexMigrationSource,
      retryPolicy,
      createRetryQuota,
      createRetryBudget,
      createCircuitBreaker,
      createMemoryPublisher,
      createMemoryBroker,
    };
    for (const [name, factory] of Object.entries(needOptions)) {
      for (const value of [undefined, null, 42, 'options', []]) {
        const error = await refusal(call(factory, value));
        expect(`${name}: ${error.code}`).toBe(`${name}: INVALID_CONFIG`);
      }
    }
    for (const [name, factory] of Object.entries(haveDefaults)) {
      for (const value of [null, 42, 'options', []]) {
        const error = await refusal(call(factory, value));
        expect(error.message).toBe(`${name} takes an options object`);
      }
    }
  });
});

describe('option values a factory cannot use', () => {
  /** Asserts `run` throws a ConfigurationError (never a TypeError) whose message has `part`. */
  async function refused(run: () => unknown, part: string): Promise<void> {
    const error = await refusal(run);
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain(part);
  }
  const publisher = createMemoryPublisher();
  const factories: Record<string, (extra: Record<string, unknown>) => unknown> = {
    createOperations: (extra) =>
      createOperations(loose<OperationsOptions>({ store, operation: 'charge', ...extra })),
    createRetention: (extra) => createRetention(loose({ store, ...extra })),
    createRelay: (extra) => createRelay(loose({ store, publisher, ...extra })),
    createInbox: (extra) => createInbox(loose<InboxOptions>({ store, consumer: 'c', ...extra })),
  };

  it.each(Object.entries(factories))(
    '%s refuses a logger or a meter without their methods',
    async (_name, create) => {
      await refused(() => create({ logger: 5 }), 'logger must have');
      await refused(() => create({ logger: { info: () => undefined } }), 'logger must have');
      await refused(() => create({ meter: 5 }), 'meter must be an OpenTelemetry Meter');
      await refused(
        () => create({ meter: {} }),
        'meter must be an OpenTelemetry Meter (with createCounter',
      );
    },
  );

  it('observeStoreStatus and resolveMeter refuse a meter without the methods they use', async () => {
    const admin = createAdmin(store);
    await refused(() => observeStoreStatus(admin, { meter: loose({}) }), 'createObservableGauge');
    await refused(
      () => resolveMeter(5 as unknown as Meter),
      'meter must be an OpenTelemetry Meter',
    );
    expect(resolveMeter(meter)).toBe(meter);
  });

  it('createInbox refuses a consumer or default scope PostgreSQL cannot store', async () => {
    await refused(
      () => createInbox({ store, consumer: 'bill\u0000ing' }),
      'consumer contains U+0000',
    );
    await refused(
      () => createInbox({ store, consumer: 'c', defaultScope: 'a\u0000' }),
      'defaultScope contains U+0000',
    );
  });

  it('createOperations refuses an operation or scope name PostgreSQL cannot store', async () => {
    await refused(
      () => createOperations({ store, operation: 'charge\u0000' }),
      'operation contains U+0000',
    );
    await refused(
      () => createOperations({ store, operation: 'charge', scope: '\u0000' }),
      'scope contains U+0000',
    );
  });

  it('createInbox and createRelay refuse a backoff cap below its base, alike', async () => {
    const backoff = { baseMs: 100, capMs: 10 };
    const message = 'backoff.capMs must not be below backoff.baseMs';
    await refused(() => createInbox({ store, consumer: 'c', backoff }), message);
    await refused(() => createRelay({ store, publisher, backoff }), message);
    // A base above the default cap (20 000 for the inbox) needs a cap of its own.
    await refused(
      () => createInbox({ store, consumer: 'c', backoff: { baseMs: 30_000 } }),
      message,
    );
    expect(createInbox({ store, consumer: 'c', backoff: { baseMs: 0, capMs: 0 } }).consumer).toBe(
      'c',
    );
  });

  it.each([
    [{ min: -3 }, 'pool.min must be an integer from 0 to 10'],
    [{ min: 1.5 }, 'pool.min must be an integer'],
    [{ max: 0 }, 'pool.max must be an integer from 1'],
    [{ min: 3, max: 2 }, 'pool.min must be an integer from 0 to 2'],
    [loose<{ max: number }>({ max: '5' }), 'pool.max must be an integer'],
  ])('createStore refuses pool %j', async (pool, message) => {
    await refused(
      () => createStore({ connectionString: 'postgres://127.0.0.1:1/none', pool }),
      message,
    );
  });
});
