import { withResilience } from '../resilience/resilient-inbox';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import { resolveMessageIdOptions, type MessageIdOptions } from '../consumer';
import { checkCount, type FaultRates } from './faults';
import type {
  ConsumeOptions,
  ConsumeSettings,
  MemoryBrokerOptions,
  MemoryMessage,
  ResolvedBrokerOptions,
  ResolvedConsumeOptions,
} from './memory-broker-types';

const BROKER_KEYS = optionKeys<MemoryBrokerOptions>()([
  'seed',
  'faults',
  'crashRedeliveryDelayMs',
  'maxRetryDelayMs',
  'maxReceiveCount',
]);
const FAULT_KEYS = optionKeys<FaultRates>()(['duplicateRate', 'concurrentRate', 'crashRate']);
/** Both forms of {@link ConsumeOptions}, in one list. */
const CONSUME_KEYS = optionKeys<
  ConsumeSettings & { inbox?: unknown; handler?: unknown; process?: unknown; resilience?: unknown }
>()([
  'inbox',
  'handler',
  'process',
  'resilience',
  'concurrency',
  'messageId',
  'scopeHeader',
  'onSettled',
]);
const MESSAGE_ID_KEYS = optionKeys<MessageIdOptions>()(['header', 'extract', 'fallback']);

/** Refuses keys {@link MemoryBrokerOptions} (and its `faults`) do not declare. @internal */
export function rejectUnknownBrokerOptions(value: unknown, context: string, path = ''): void {
  rejectUnknownOptions(value, BROKER_KEYS, context, path);
  const faults: unknown = (value as MemoryBrokerOptions | undefined)?.faults;
  rejectUnknownOptions(faults, FAULT_KEYS, context, path === '' ? 'faults' : `${path}.faults`);
}

/** A delay option: a number of milliseconds, 0 or more. @internal */
export function checkDelay(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new ConfigurationError(`${name} must be a number of milliseconds, 0 or more`, {
      [name]: value,
    });
  }
  return value;
}

/** A queue name: a non-empty string. @internal */
export function checkQueueName(queue: unknown): string {
  if (typeof queue !== 'string' || queue.length === 0) {
    throw new ConfigurationError('a queue name must be a non-empty string', { queue });
  }
  return queue;
}

/** Validates {@link MemoryBrokerOptions}. @internal */
export function resolveBrokerOptions(options: MemoryBrokerOptions): ResolvedBrokerOptions {
  rejectUnknownBrokerOptions(options, 'createMemoryBroker');
  return {
    crashDelayMs: checkDelay('crashRedeliveryDelayMs', options.crashRedeliveryDelayMs, 5),
    maxRetryDelayMs: checkDelay('maxRetryDelayMs', options.maxRetryDelayMs, Infinity),
    maxReceiveCount:
      options.maxReceiveCount === undefined
        ? Infinity
        : checkCount('maxReceiveCount', options.maxReceiveCount),
  };
}

function optionalFunctionOption<F>(value: F | undefined, name: string): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new ConfigurationError(`${name} must be a function`);
  }
  return value;
}

/** How the consumer turns an envelope into an outcome: its inbox and handler, or `process`. */
function processorOf<R>(options: ConsumeOptions<R>): ResolvedConsumeOptions<R>['process'] {
  if (options.process !== undefined) {
    if (options.resilience !== undefined) {
      throw new ConfigurationError('resilience needs an inbox and a handler, not a process');
    }
    const process = optionalFunctionOption(options.process, 'process');
    if (process === undefined) throw new ConfigurationError('process must be a function');
    // A scripted processor answers for any R; the broker only reads the status.
    return (envelope) => process(envelope) as ReturnType<ResolvedConsumeOptions<R>['process']>;
  }
  const { handler } = options;
  if (
    !options.inbox ||
    typeof options.inbox.process !== 'function' ||
    typeof handler !== 'function'
  ) {
    throw new ConfigurationError('consume needs an inbox and a handler, or a process');
  }
  const inbox =
    options.resilience === undefined
      ? options.inbox
      : withResilience(options.inbox, options.resilience, 'consume');
  return (envelope, signal) => inbox.process(envelope, handler, { signal, messaging: MEMORY });
}

/** The in-memory broker's `messaging.system` in justonce's spans. @internal */
export const MEMORY_SYSTEM = 'justonce_memory';

/** The in-memory broker, for the inbox's `process` spans: its queue is the destination. */
const MEMORY = { system: MEMORY_SYSTEM } as const;

/** Validates {@link ConsumeOptions}; every problem is a {@link ConfigurationError}. @internal */
export function resolveConsumeOptions<R>(
  queue: string,
  options: ConsumeOptions<R>,
): ResolvedConsumeOptions<R> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('consume needs an options object');
  }
  rejectUnknownOptions(options, CONSUME_KEYS, 'consume');
  rejectUnknownOptions(options.messageId, MESSAGE_ID_KEYS, 'consume', 'messageId');
  const scopeHeader = options.scopeHeader ?? 'tenant';
  if (typeof scopeHeader !== 'string' || scopeHeader === '') {
    throw new ConfigurationError('scopeHeader must be a non-empty string', { scopeHeader });
  }
  const messageId = options.messageId ?? {};
  optionalFunctionOption(messageId.extract, 'messageId.extract');
  return {
    concurrency: checkCount('concurrency', options.concurrency ?? 1),
    name: options.inbox?.consumer ?? queue,
    process: processorOf(options),
    messageId: resolveMessageIdOptions<MemoryMessage>(messageId),
    scopeHeader,
    onSettled: optionalFunctionOption(options.onSettled, 'onSettled'),
  };
}
