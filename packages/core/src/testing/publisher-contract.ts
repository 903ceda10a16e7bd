import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors';
import type { OutgoingMessage, Publisher, PublishResult } from '../transport/publisher';

/** A message as a consumer of the destination receives it, in the transport's own terms. */
export interface ContractDelivery {
  /** The message id the transport carried (a property, header or attribute). */
  readonly messageId: string;
  /**
   * The partition key as the transport carries it (`null` for a message without one), or
   * `undefined` when the transport does not carry keys: the key check is then skipped.
   */
  readonly key?: string | null;
  /** Every header the message arrived with (the transport's own may be among them). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body bytes. */
  readonly payload: Uint8Array;
}

/** Options of {@link checkPublisherContract}. */
export interface PublisherContractOptions {
  /** The publisher to check, ready to publish; the check closes it at the end. */
  readonly publisher: Publisher;
  /** A destination that exists and is empty, read back through {@link receive}. */
  readonly destination: string;
  /**
   * Reads `count` messages from `destination`, in the order the broker delivers them;
   * resolves once it has them, or with what it got after its own time limit.
   */
  readonly receive: (destination: string, count: number) => Promise<ContractDelivery[]>;
  /**
   * A destination the transport refuses for good (a name it cannot take). The contract then
   * expects a non-retriable result for that message and ordinary results for the rest of the
   * call. Omit to skip that check.
   */
  readonly invalidDestination?: string;
  /**
   * Whether the destination delivers one key's messages in the order published (a Kafka
   * partition, a FIFO queue, a single AMQP queue). Default true; false skips the order check.
   */
  readonly ordersByKey?: boolean;
}

/** The outcome of one clause of the contract. */
export interface ContractCheck {
  /** What the clause says. */
  readonly clause: string;
  /** Whether the publisher kept it. */
  readonly ok: boolean;
  /** What went wrong, when it did not. */
  readonly problem?: string;
}

/** The clauses, as {@link ContractCheck.clause} names them. */
export const CONTRACT_CLAUSES = {
  empty: 'an empty call resolves to no results',
  results: 'one result per message, in input order, with its message id',
  refused: 'a destination refused for good fails its own message, not retriable, and no other',
  delivered: 'every message arrives once, with its message id, headers, key and payload',
  order: "one key's messages arrive in the order published",
  close: 'close can be called twice, and nothing is published after it',
} as const;

const KEYS = optionKeys<PublisherContractOptions>()([
  'publisher',
  'destination',
  'receive',
  'invalidDestination',
  'ordersByKey',
]);

/** Messages the contract publishes to the destination in its main call. */
const MESSAGES = 12;

/**
 * Checks that a transport's {@link Publisher} keeps the contract the relay relies on, against
 * its real broker: results per message in input order, per-message failures instead of a
 * thrown call, message ids, headers, keys and payload bytes carried intact, one key's order
 * kept, and a final close. Framework-neutral: it resolves to one {@link ContractCheck} per
 * clause rather than asserting, so any test runner can report the failed ones.
 *
 * @example
 * ```ts
 * const checks = await checkPublisherContract({ publisher, destination, receive });
 * expect(checks.filter((c) => !c.ok)).toEqual([]);
 * ```
 */
export async function checkPublisherContract(
  options: PublisherContractOptions,
): Promise<ContractCheck[]> {
  rejectUnknownOptions(options, KEYS, 'checkPublisherContract');
  const { publisher, destination, receive } = options;
  if (
    typeof publisher?.publish !== 'function' ||
    typeof destination !== 'string' ||
    typeof receive !== 'function'
  ) {
    throw new ConfigurationError(
      'checkPublisherContract needs a publisher, a destination and a receive function',
    );
  }
  const checks: ContractCheck[] = [];
  const record = (clause: string, problem: string | undefined): void => {
    checks.push(problem === undefined ? { clause, ok: true } : { clause, ok: false, problem });
  };
  const tag = Math.random().toString(36).slice(2, 10);
  const messages = contractMessages(destination, tag);

  record(
    CONTRACT_CLAUSES.empty,
    await attempt(async () => {
      const results = await publisher.publish([]);
      return results.length === 0 ? undefined : `got ${results.length} results`;
    }),
  );

  let expected = messages;
  record(
    CONTRACT_CLAUSES.results,
    await attempt(async () => resultProblem(messages, await publisher.publish(messages))),
  );

  if (options.invalidDestination !== undefined) {
    const valid = message(destination, `${tag}-valid`, null, 0);
    const refused = message(options.invalidDestination, `${tag}-refused`, null, 1);
    expected = [...messages, valid];
    record(
      CONTRACT_CLAUSES.refused,
      await attempt(async () => {
        const results = await publisher.publish([valid, refused]);
        if (results.length !== 2) return `got ${results.length} results for 2 messages`;
        const [first, second] = results as [PublishResult, PublishResult];
        if (!first.ok) return `the valid message failed: ${first.error.message}`;
        if (second.ok) return 'the refused destination was reported published';
        if (second.retriable) return 'the refused destination was reported retriable';
        if (second.messageId !== refused.messageId) return 'the failure names another message';
        return undefined;
      }),
    );
  }

  let deliveries: ContractDelivery[] = [];
  record(
    CONTRACT_CLAUSES.delivered,
    await attempt(async () => {
      deliveries = await receive(destination, expected.length);
      return deliveryProblem(expected, deliveries);
    }),
  );

  if (options.ordersByKey !== false) {
    record(CONTRACT_CLAUSES.order, orderProblem(messages, deliveries));
  }

  record(
    CONTRACT_CLAUSES.close,
    await attempt(async () => {
      await publisher.close();
      await publisher.close();
      const late = message(destination, `${tag}-late`, null, 0);
      const results = await publisher.publish([late]).catch(() => null);
      if (results !== null && results.some((r) => r.ok)) {
        return 'a message was reported published after close';
      }
      return undefined;
    }),
  );
  return checks;
}

/** Runs `check`, turning a throw into the problem it describes. */
async function attempt(check: () => Promise<string | undefined>): Promise<string | undefined> {
  try {
    return await check();
  } catch (error) {
    return `threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
  }
}

/** One contract message: a JSON body with non-ASCII text, a custom header, its index. */
function message(destination: string, id: string, key: string | null, n: number): OutgoingMessage {
  return {
    messageId: id,
    destination,
    key,
    headers: { 'x-contract': `value ${n} ✓`, 'correlation-id': `corr-${n}` },
    payload: new TextEncoder().encode(JSON.stringify({ n, text: 'Grüße, 世界' })),
  };
}

/** Two keys taking turns and, between them, messages without a key. */
function contractMessages(destination: string, tag: string): OutgoingMessage[] {
  return Array.from({ length: MESSAGES }, (_, n) =>
    message(destination, `${tag}-${n}`, n % 4 === 3 ? null : `key-${n % 2}`, n),
  );
}

function resultProblem(
  messages: readonly OutgoingMessage[],
  results: readonly PublishResult[],
): string | undefined {
  if (results.length !== messages.length) {
    return `got ${results.length} results for ${messages.length} messages`;
  }
  for (const [i, result] of results.entries()) {
    if (result.messageId !== messages[i]!.messageId) {
      return `result ${i} is for ${result.messageId}, not ${messages[i]!.messageId}`;
    }
    if (!result.ok) return `${result.messageId} failed: ${result.error.message}`;
  }
  return undefined;
}

function deliveryProblem(
  expected: readonly OutgoingMessage[],
  deliveries: readonly ContractDelivery[],
): string | undefined {
  const byId = new Map<string, ContractDelivery[]>();
  for (const d of deliveries) {
    const copies = byId.get(d.messageId);
    if (copies) copies.push(d);
    else byId.set(d.messageId, [d]);
  }
  const expectedIds = new Set(expected.map((m) => m.messageId));
  for (const m of expected) {
    const got = byId.get(m.messageId) ?? [];
    if (got.length !== 1) return `${m.messageId} arrived ${got.length} times`;
    const d = got[0]!;
    for (const [name, value] of Object.entries(m.headers)) {
      if (d.headers[name] !== value) {
        return `${m.messageId}: header ${name} is ${JSON.stringify(d.headers[name])}, not ${JSON.stringify(value)}`;
      }
    }
    if (d.key !== undefined && d.key !== m.key) {
      return `${m.messageId}: key ${JSON.stringify(d.key)}, not ${JSON.stringify(m.key)}`;
    }
    if (!sameBytes(d.payload, m.payload)) return `${m.messageId}: the payload bytes differ`;
  }
  const unexpected = deliveries.find((d) => !expectedIds.has(d.messageId));
  return unexpected ? `an unexpected message arrived: ${unexpected.messageId}` : undefined;
}

function orderProblem(
  messages: readonly OutgoingMessage[],
  deliveries: readonly ContractDelivery[],
): string | undefined {
  for (const key of new Set(messages.map((m) => m.key))) {
    if (key === null) continue;
    const sent = messages.filter((m) => m.key === key).map((m) => m.messageId);
    const wanted = new Set(sent);
    const arrived = deliveries.map((d) => d.messageId).filter((id) => wanted.has(id));
    if (arrived.join() !== sent.join()) {
      return `key ${key}: arrived ${arrived.join(', ')}; published ${sent.join(', ')}`;
    }
  }
  return undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i]);
}
