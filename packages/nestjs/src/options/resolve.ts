import {
  ConfigurationError,
  isTransactionAdapter,
  type Store,
  type TransactionAdapter,
} from '@justonce/core';
import { integerOption, optionKeys, rejectUnknownOptions } from '@justonce/core/transport';
import type {
  ConsumerSettings,
  IdempotencyDefaults,
  JustonceModuleOptions,
  JustonceRootOptions,
  RelaySettings,
  ShutdownSettings,
  TransportSettings,
} from './types';

/** The module's options, validated, with the defaults the module itself applies. @internal */
export interface ModuleConfig {
  readonly options: JustonceModuleOptions;
  readonly migrate: boolean;
  /** `transactions`, to spread into the options of the outbox, inboxes and operations. */
  readonly seam: { readonly transactions?: TransactionAdapter<unknown> };
  readonly relays: readonly RelaySettings[];
  readonly shutdownTimeoutMs: number;
}

const MODULE_KEYS = optionKeys<JustonceModuleOptions>()([
  'store',
  'migrate',
  'transactions',
  'outbox',
  'operations',
  'idempotency',
  'inbox',
  'transports',
  'consumers',
  'relays',
  'shutdown',
]);
/** `forRoot`'s keys: the module's and `isGlobal`. */
export const ROOT_KEYS = optionKeys<JustonceRootOptions>()([...MODULE_KEYS, 'isGlobal']);
const TRANSPORT_KEYS = optionKeys<TransportSettings>()(['kafka', 'rabbitmq', 'sqs', 'memory']);
const CONSUMER_KEYS = optionKeys<ConsumerSettings>()([
  'inbox',
  'unknownType',
  'kafka',
  'rabbitmq',
  'sqs',
]);
const IDEMPOTENCY_KEYS = optionKeys<IdempotencyDefaults>()([
  'scope',
  'required',
  'fingerprint',
  'storeStatuses',
  'replayHeaders',
  'inProgress',
  'retentionMs',
  'maxKeyLength',
  'resilience',
]);
const SHUTDOWN_KEYS = optionKeys<ShutdownSettings>()(['timeoutMs']);
const CONTEXT = 'JustonceModule';

/**
 * Validates the module's options (what `forRoot` got, or `forRootAsync`'s factory returned):
 * an unknown or bad option is a `ConfigurationError` naming it, at boot. The options of the
 * objects the module creates (store, outbox, inboxes, consumers, relays) are validated by
 * their own factories, also at boot. @internal
 */
export function resolveModuleOptions(value: unknown): ModuleConfig {
  rejectUnknownOptions(value, MODULE_KEYS, CONTEXT);
  const options = value as JustonceModuleOptions;
  storeOption(options.store);
  rejectUnknownOptions(options.transports, TRANSPORT_KEYS, CONTEXT, 'transports');
  rejectUnknownOptions(options.shutdown, SHUTDOWN_KEYS, CONTEXT, 'shutdown');
  // Each route validates its merged options at boot; this names a misspelt default even
  // when no route uses it.
  rejectUnknownOptions(options.idempotency, IDEMPOTENCY_KEYS, CONTEXT, 'idempotency');
  for (const [name, settings] of Object.entries(objectOption(options.consumers, 'consumers'))) {
    rejectUnknownOptions(settings, CONSUMER_KEYS, CONTEXT, `consumers.${name}`);
  }
  for (const name of ['outbox', 'operations', 'idempotency', 'inbox', 'transports'] as const) {
    objectOption(options[name], name);
  }
  const memory = options.transports?.memory;
  if (memory !== undefined && typeof memory.broker?.consume !== 'function') {
    throw new ConfigurationError(
      `${CONTEXT}: transports.memory.broker must be a broker from createMemoryBroker()`,
    );
  }
  if (options.migrate !== undefined && typeof options.migrate !== 'boolean') {
    throw new ConfigurationError(`${CONTEXT}: migrate must be a boolean`, {
      migrate: typeof options.migrate,
    });
  }
  return {
    options,
    migrate: options.migrate ?? false,
    seam: transactionsOption(options.transactions),
    relays: relaysOption(options.relays),
    shutdownTimeoutMs: integerOption(
      options.shutdown?.timeoutMs,
      `${CONTEXT}: shutdown.timeoutMs`,
      30_000,
      0,
      2 ** 31 - 1,
    ),
  };
}

/** True for a `Store` (from `createStore`), false for `createStore`'s options. @internal */
export function isStore(value: unknown): value is Store {
  const store = value as Partial<Store> | null;
  return (
    typeof store === 'object' &&
    store !== null &&
    typeof store.migrate === 'function' &&
    typeof store.close === 'function' &&
    typeof store.names === 'object'
  );
}

function storeOption(value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(
      `${CONTEXT}: store must be createStore's options ({ connectionString } or { pglite }) or a Store`,
      { store: value === null ? 'null' : typeof value },
    );
  }
}

function objectOption(value: unknown, name: string): Readonly<Record<string, unknown>> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(`${CONTEXT}: ${name} must be an object`, {
      [name]: Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value,
    });
  }
  return value as Readonly<Record<string, unknown>>;
}

function transactionsOption(value: unknown): ModuleConfig['seam'] {
  if (value === undefined) return {};
  if (!isTransactionAdapter(value)) {
    throw new ConfigurationError(
      `${CONTEXT}: transactions must be a transaction adapter, e.g. kyselyTransactions(db) from @justonce/core/kysely`,
      { transactions: value === null ? 'null' : typeof value },
    );
  }
  return { transactions: value };
}

function relaysOption(value: unknown): readonly RelaySettings[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new ConfigurationError(`${CONTEXT}: relays must be an array of relay options`, {
      relays: typeof value,
    });
  }
  value.forEach((relay: unknown, index) => {
    const publisher = (relay as Partial<RelaySettings> | null)?.publisher;
    if (typeof publisher?.publish !== 'function' || typeof publisher.close !== 'function') {
      throw new ConfigurationError(`${CONTEXT}: relays[${index}] needs a publisher`, { index });
    }
  });
  return value as readonly RelaySettings[];
}
