import {
  integerOption,
  optionKeys,
  optionalBoolean,
  rejectUnknownOptions,
} from '../../config/options';
import { ConfigurationError } from '../../errors/configuration-error';
import type { Store } from '../../store/store';
import type { LogRelayOptions, RelayOptions } from '../types';

/** {@link LogRelayOptions} with every default applied and checked. @internal */
export interface ResolvedLogOptions {
  readonly slot: string;
  readonly publication: string;
  readonly create: boolean;
  readonly standbyRetryMs: number;
  readonly statusIntervalMs: number;
  readonly takeOverFromPolling: boolean;
}

const LOG_KEYS = optionKeys<LogRelayOptions>()([
  'slot',
  'publication',
  'create',
  'standbyRetryMs',
  'statusIntervalMs',
  'takeOverFromPolling',
]);

/** The relay options that steer claims and marks, which the log mode has none of. */
const POLL_ONLY = [
  'concurrency',
  'maxConcurrentPublishes',
  'leaseMs',
  'claimHoldMs',
  'pollIntervalMs',
  'notify',
  'onPublished',
  'claim',
] as const satisfies readonly (keyof RelayOptions)[];

/** A slot or publication name: PostgreSQL's rule for slot names, which publications share here. */
const NAME = /^[a-z0-9_]{1,63}$/;

function nameOption(value: unknown, option: string, fallback: string): string {
  const name = value ?? fallback;
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new ConfigurationError(
      `${option} must be 1 to 63 lower-case letters, digits or underscores`,
      { [option]: name },
    );
  }
  return name;
}

/**
 * Checks `mode` and `log`: `null` for the polling mode; the log mode's settings, with its
 * defaults, when `mode` is `'log'`, which needs PostgreSQL (a server: PGlite has no
 * replication, MySQL no `pgoutput`) and refuses the polling mode's own options. @internal
 */
export function resolveLogOptions(options: RelayOptions, store: Store): ResolvedLogOptions | null {
  const mode = options.mode ?? 'poll';
  if (mode !== 'poll' && mode !== 'log') {
    throw new ConfigurationError("mode must be 'poll' or 'log'", { mode });
  }
  if (mode === 'poll') {
    if (options.log !== undefined) {
      throw new ConfigurationError("log options apply to mode 'log' only", { mode });
    }
    return null;
  }
  if (store.dialect !== 'postgres') {
    throw new ConfigurationError(
      `mode 'log' reads a PostgreSQL logical replication slot: a ${store.dialect} store relays by polling`,
      { mode, dialect: store.dialect },
    );
  }
  const given = POLL_ONLY.filter((key) => options[key] !== undefined);
  if (given.length > 0) {
    throw new ConfigurationError(
      `${given.join(', ')} ${given.length === 1 ? 'applies' : 'apply'} to mode 'poll' only`,
      { mode, options: given },
    );
  }
  const log = options.log ?? {};
  if (typeof log !== 'object' || log === null) {
    throw new ConfigurationError('log must be an object', { log });
  }
  rejectUnknownOptions(log, LOG_KEYS, 'createRelay', 'log');
  const slot = nameOption(log.slot, 'log.slot', defaultSlot(store));
  return {
    slot,
    publication: nameOption(log.publication, 'log.publication', slot),
    create: optionalBoolean(log.create, 'log.create', true),
    standbyRetryMs: integerOption(log.standbyRetryMs, 'log.standbyRetryMs', 2_000, 50, 60_000),
    statusIntervalMs: integerOption(
      log.statusIntervalMs,
      'log.statusIntervalMs',
      10_000,
      100,
      30_000,
    ),
    takeOverFromPolling: optionalBoolean(log.takeOverFromPolling, 'log.takeOverFromPolling', false),
  };
}

/** `<schema>_<prefix>outbox`, cut to 63 characters (schema and prefix are `[a-z_][a-z0-9_]*`). */
function defaultSlot(store: Store): string {
  return `${store.schema}_${store.tablePrefix}outbox`.slice(0, 63);
}
