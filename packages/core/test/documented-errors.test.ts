import {
  ConfigurationError,
  RetentionTooShortError,
  createInbox,
  createMemoryPublisher,
  createStore,
  hasErrorCode,
  isRetentionTooShortError,
  type Store,
} from '../src';
import { BrokerClosedError, createMemoryBroker } from '../src/testing';

/**
 * Errors the docs name, thrown where the docs say, with the code they give, for the cases no
 * other test shows.
 */

let store: Store;

beforeAll(async () => {
  // Construction never touches the database; a lazily connecting store is enough.
  store = await createStore({ connectionString: 'postgres://127.0.0.1:1/none' });
});

afterAll(async () => {
  await store.close();
});

describe('RetentionTooShortError (docs/retention.md: the inbox makes the same check)', () => {
  it('is what createInbox throws for a retentionMs below redeliveryHorizonMs', () => {
    let caught: unknown;
    try {
      createInbox({ store, consumer: 'c', retentionMs: 1_000, redeliveryHorizonMs: 2_000 });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RetentionTooShortError);
    // Still a ConfigurationError, as the docs promise for every bad option.
    expect(caught).toBeInstanceOf(ConfigurationError);
    expect(isRetentionTooShortError(caught)).toBe(true);
    expect(hasErrorCode(caught, 'INVALID_CONFIG')).toBe(true);
    expect(caught).toMatchObject({
      retentionMs: 1_000,
      redeliveryHorizonMs: 2_000,
      details: { problem: 'RETENTION_TOO_SHORT', retentionMs: 1_000, redeliveryHorizonMs: 2_000 },
    });
  });

  it('lets a retentionMs equal to the horizon through', () => {
    expect(() =>
      createInbox({ store, consumer: 'c', retentionMs: 2_000, redeliveryHorizonMs: 2_000 }),
    ).not.toThrow();
  });
});

describe('BrokerClosedError (docs/testing.md: the broker or a publisher used after close)', () => {
  it('refuses a publish through a closed broker, even an empty one', async () => {
    const broker = createMemoryBroker();
    const publisher = broker.publisher();
    await broker.close();
    await expect(publisher.publish([])).rejects.toBeInstanceOf(BrokerClosedError);
    await expect(publisher.publish([])).rejects.toMatchObject({ code: 'BROKER_CLOSED' });
  });
});

describe('ConfigurationError (README: every factory, every bad option)', () => {
  it('is what createMemoryPublisher throws for a bad delayMs', () => {
    for (const delayMs of [-1, Number.NaN, Infinity]) {
      expect(() => createMemoryPublisher({ delayMs })).toThrow(ConfigurationError);
    }
  });
});
