import type { Consumer } from '../src';
import {
  CONSUMER_CONTRACT_CLAUSES,
  checkConsumerContract,
  createMemoryBroker,
  type ConsumerContractOptions,
  type ContractCheck,
  type ContractConsumerSettings,
  type MemoryBroker,
  type MemoryMessage,
} from '../src/testing';
import { ALL_STORE_KINDS, openTestStore } from './db';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

const bodyText = (m: MemoryMessage): string =>
  typeof m.body === 'string' ? m.body : new TextDecoder().decode(m.body);

/** The memory broker's consumer built from the contract's settings, as a transport test does. */
function memoryConsumer(broker: MemoryBroker, queue: string, s: ContractConsumerSettings) {
  const { extract, fallback } = s.messageId;
  return broker.consume(queue, {
    inbox: s.inbox,
    handler: s.handler,
    onSettled: s.onSettled,
    messageId: {
      fallback,
      ...(extract === undefined ? {} : { extract: (m: MemoryMessage) => extract(bodyText(m)) }),
    },
    ...(s.concurrency === undefined ? {} : { concurrency: s.concurrency }),
    ...(s.resilience === undefined ? {} : { resilience: s.resilience }),
  });
}

/** The contract's options for the memory broker; `change` breaks one part of it. */
function memoryContract(
  broker: MemoryBroker,
  store: TestStore,
  change: Partial<ConsumerContractOptions> = {},
): ConsumerContractOptions {
  let queues = 0;
  return {
    store,
    newDestination: async () => `contract-${(queues += 1)}`,
    send: async (queue, messages) =>
      broker.send(
        queue,
        messages.map((m) => ({
          id: m.id,
          body: m.body,
          ...(m.headers === undefined ? {} : { headers: m.headers }),
          ...(m.key === undefined ? {} : { key: m.key }),
        })),
      ),
    createConsumer: (queue, settings) => memoryConsumer(broker, queue, settings),
    features: { reportsReceiveCount: true },
    timeoutMs: 5_000,
    ...change,
  };
}

const failed = (checks: readonly ContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => c.clause);

describe.each(ALL_STORE_KINDS)('checkConsumerContract on %s', (kind) => {
  let store: TestStore;
  let broker: MemoryBroker;

  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(async () => {
    await store.dispose();
  });
  beforeEach(() => {
    broker = createMemoryBroker();
  });
  afterEach(async () => {
    await broker.close();
  });

  it('passes the memory broker on every clause', async () => {
    const started = Date.now();
    const checks = await checkConsumerContract(memoryContract(broker, store));
    expect(checks.map((c) => c.clause)).toEqual(Object.values(CONSUMER_CONTRACT_CLAUSES));
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(Date.now() - started).toBeLessThan(20_000);
    // Without their features the fault clauses are skipped, and the check says why.
    expect(checks.filter((c) => c.skipped !== undefined).map((c) => c.skipped)).toEqual([
      'the transport gave no features.restart',
      'the transport gave no features.partition',
    ]);
  });

  // One store kind is enough: the clause's load takes about 20 s, so it is defined for
  // PostgreSQL only (not skipped on PGlite).
  if (kind === 'postgres') {
    it('runs the restart clause, and fails it when the broker loses what it accepted while down', async () => {
      let down = false;
      const options = memoryContract(broker, store, {
        // While "down" the broker accepts messages and loses them: they go where nobody reads.
        createPublisher: () => {
          const inner = broker.publisher();
          return {
            publish: (messages) =>
              inner.publish(down ? messages.map((m) => ({ ...m, destination: 'void' })) : messages),
            close: () => inner.close(),
          };
        },
        features: {
          restart: {
            stop: async () => void (down = true),
            start: async () => void (down = false),
            downMs: 1_000,
          },
        },
      });
      const checks = await checkConsumerContract(options);
      const restart = checks.find((c) => c.clause === CONSUMER_CONTRACT_CLAUSES.restart);
      expect(failed(checks)).toEqual([CONSUMER_CONTRACT_CLAUSES.restart]);
      expect(restart?.problem).toMatch(/^lost \d+ of 300 events$/);
      expect(restart?.figures).toMatchObject({ events: 300, doubled: 0, dead: 0, charged: 0 });
    }, 60_000);
  }

  it('fails a consumer that ignores messageId.extract or resilience, or does not drain at stop', async () => {
    // A shorter wait than the default: the clause that fails waits it out; the others pass
    // within it, on PGlite too while other suites load the machine (2 s was not always enough).
    const noExtract = memoryContract(broker, store, {
      timeoutMs: 6_000,
      createConsumer: (queue, { resilience: _ignored, ...s }) =>
        memoryConsumer(broker, queue, { ...s, messageId: { fallback: s.messageId.fallback } }),
    });
    expect(failed(await checkConsumerContract(noExtract))).toEqual([
      CONSUMER_CONTRACT_CLAUSES.extract,
      CONSUMER_CONTRACT_CLAUSES.resilience,
    ]);

    const noDrain = memoryContract(broker, store, {
      createConsumer: (queue, s): Consumer => {
        const inner = memoryConsumer(broker, queue, s);
        return {
          start: () => inner.start(),
          stop: (options) => inner.stop({ ...options, drain: false }),
          get running() {
            return inner.running;
          },
        };
      },
    });
    expect(failed(await checkConsumerContract(noDrain))).toEqual([CONSUMER_CONTRACT_CLAUSES.drain]);
  });

  it('fails a consumer that can be started twice', async () => {
    const restartable = memoryContract(broker, store, {
      createConsumer: (queue, s): Consumer => {
        const inner = memoryConsumer(broker, queue, s);
        return {
          start: () => (inner.running ? Promise.resolve() : inner.start()),
          stop: (options) => inner.stop(options),
          get running() {
            return inner.running;
          },
        };
      },
    });
    const checks = await checkConsumerContract(restartable);
    expect(failed(checks)).toEqual([CONSUMER_CONTRACT_CLAUSES.lifecycle]);
    expect(checks.find((c) => !c.ok)?.problem).toMatch(/second start/);
  });

  it('refuses unknown options', async () => {
    const options = { ...memoryContract(broker, store), featurez: {} };
    await expect(checkConsumerContract(options)).rejects.toThrow(/featurez/);
  });

  it('refuses a fault feature without createPublisher, or without its functions', async () => {
    const restart = { stop: async () => undefined, start: async () => undefined };
    await expect(
      checkConsumerContract(memoryContract(broker, store, { features: { restart } })),
    ).rejects.toThrow(/createPublisher/);
    const withPublisher = { createPublisher: () => broker.publisher() };
    await expect(
      checkConsumerContract(
        memoryContract(broker, store, {
          ...withPublisher,
          features: {
            partition: { cut: async () => undefined, heal: async () => undefined, cutMs: 0 },
          },
        }),
      ),
    ).rejects.toThrow(/cutMs/);
  });
});
