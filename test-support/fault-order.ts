/**
 * Deliveries with several faults at once, for the tests of docs/bad-input.md's "Which fault
 * wins": the order as the doc states it, the inbox and handler that make every check
 * reachable (a JSON `decode`, a `messageHandler` with one route), and the cases each
 * transport sends through its real broker.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createInbox,
  DEAD_LETTER_HEADERS,
  defineMessage,
  messageHandler,
  on,
  type DeadLetter,
  type DeadLetterReason,
  type Handler,
  type Inbox,
  type Store,
} from '@justonce/core';
import { z } from 'zod';
import { writeEffect } from './effects';
import { waitFor, type WaitForOptions } from './wait-for';

/** The reasons of docs/bad-input.md's numbered list under "Which fault wins", in order. */
export function documentedOrder(): DeadLetterReason[] {
  const text = readFileSync(join(__dirname, '../docs/bad-input.md'), 'utf8');
  const section = text.split('## Which fault wins')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^\d+\. `([A-Z_]+)`/gm)].map((m) => m[1] as DeadLetterReason);
}

/** The documented winner among `faults`: the first of them in {@link documentedOrder}. */
export function winnerOf(faults: readonly DeadLetterReason[]): DeadLetterReason {
  const winner = documentedOrder().find((reason) => faults.includes(reason));
  if (winner === undefined) throw new Error(`no documented check for ${faults.join(', ')}`);
  return winner;
}

/** The one message type the fault-order handler routes. */
export const OrderPlaced = defineMessage({
  type: 'order.placed',
  schema: z.object({ id: z.string(), cents: z.number().int() }),
  destination: 'orders',
});

/** The body decoded as UTF-8 JSON; a throw is `UNDECODABLE_BODY`. */
export function decodeJson(body: Uint8Array | string): unknown {
  return JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'));
}

/** An inbox whose `decode` parses JSON, so every check of the list can fail. */
export function faultOrderInbox(store: Store, consumer: string): Inbox {
  return createInbox({ store, consumer, decode: decodeJson });
}

/** A `messageHandler` with a route for {@link OrderPlaced} that writes the effect. */
export function faultOrderHandler(store: Store, consumer: string): Handler {
  return messageHandler({
    routes: [
      on(OrderPlaced, async (_order, ctx) => {
        await writeEffect(ctx.trx, store, ctx.messageId, { consumer });
      }),
    ],
  });
}

/** The inbox and handler of {@link faultOrderInbox} and {@link faultOrderHandler}, to spread into a consumer's options. */
export function faultOrderConsumer(
  store: Store,
  consumer: string,
): { inbox: Inbox; handler: Handler } {
  return { inbox: faultOrderInbox(store, consumer), handler: faultOrderHandler(store, consumer) };
}

/** A delivery as a broker test sends it: the id and every header as text, the body as text. */
export interface FaultyDelivery {
  readonly label: string;
  /** The checks it fails. */
  readonly faults: readonly DeadLetterReason[];
  /** The `message-id` header; `undefined`: none (the consumer must not fall back to another). */
  readonly id: string | undefined;
  /** Headers besides `message-id`: `tenant`, `type`, others. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

const GOOD_BODY = JSON.stringify({ id: 'o-1', cents: 100 });
const UNDECODABLE = 'not json {';
const BAD_PAYLOAD = JSON.stringify({ id: 1 });

/**
 * Text each broker can carry that fails the id, scope and header checks: U+0000 where the
 * broker takes it (Kafka, RabbitMQ), else (SQS) ids and tenants too long to be one, and no
 * header fault at all.
 */
export interface FaultText {
  readonly badId: (tag: string) => string;
  readonly badTenant: string;
  /** A header value that fails check 5; `undefined` when the broker cannot carry one. */
  readonly badHeader: string | undefined;
}

/** U+0000, which Kafka and RabbitMQ carry in headers. */
export const NUL_TEXT: FaultText = {
  badId: (tag) => `nul\u0000id-${tag}`,
  badTenant: 'acme\u0000corp',
  badHeader: 'x\u0000y',
};

/** Text too long to be an id or a scope (SQS refuses U+0000 in attributes). */
export const LONG_TEXT: FaultText = {
  badId: (tag) => `long-${tag}-`.padEnd(300, 'x'),
  badTenant: 't'.repeat(300),
  badHeader: undefined,
};

/**
 * Deliveries with two and three faults each, every one with a message id of its own (made
 * from `tag`) where it has one, plus one good delivery (`good`, no faults).
 */
export function faultyDeliveries(tag: string, text: FaultText): FaultyDelivery[] {
  const known = { type: OrderPlaced.type };
  const note: Record<string, string> = text.badHeader === undefined ? {} : { note: text.badHeader };
  const noteFault: DeadLetterReason[] = text.badHeader === undefined ? [] : ['INVALID_HEADERS'];
  const cases: FaultyDelivery[] = [
    {
      label: 'good',
      faults: [],
      id: `good-${tag}`,
      headers: known,
      body: GOOD_BODY,
    },
    {
      label: 'a bad tenant and an undecodable body',
      faults: ['INVALID_SCOPE', 'UNDECODABLE_BODY'],
      id: `scope-body-${tag}`,
      headers: { ...known, tenant: text.badTenant },
      body: UNDECODABLE,
    },
    {
      label: 'a bad id, a bad tenant and an undecodable body',
      faults: ['INVALID_MESSAGE_ID', 'INVALID_SCOPE', 'UNDECODABLE_BODY'],
      id: text.badId(tag),
      headers: { ...known, tenant: text.badTenant },
      body: UNDECODABLE,
    },
    {
      label: 'no id, a bad tenant and an undecodable body',
      faults: ['MISSING_MESSAGE_ID', 'INVALID_SCOPE', 'UNDECODABLE_BODY'],
      id: undefined,
      headers: { ...known, tenant: text.badTenant, note: `no-id-${tag}` },
      body: UNDECODABLE,
    },
    {
      label: 'an undecodable body and an unknown type',
      faults: ['UNDECODABLE_BODY', 'UNKNOWN_MESSAGE_TYPE'],
      id: `body-type-${tag}`,
      headers: { type: 'order.unknown' },
      body: UNDECODABLE,
    },
    {
      label: 'an unknown type and a payload that fails the schema',
      faults: ['UNKNOWN_MESSAGE_TYPE', 'INVALID_PAYLOAD'],
      id: `type-payload-${tag}`,
      headers: { type: 'order.unknown' },
      body: BAD_PAYLOAD,
    },
  ];
  if (text.badHeader === undefined) return cases;
  return [
    ...cases,
    {
      label: 'a header with U+0000 and an undecodable body',
      faults: ['INVALID_HEADERS', 'UNDECODABLE_BODY'],
      id: `header-body-${tag}`,
      headers: { ...known, ...note },
      body: UNDECODABLE,
    },
    {
      label: 'a tenant and a header with U+0000, and an undecodable body',
      faults: ['INVALID_SCOPE', ...noteFault, 'UNDECODABLE_BODY'],
      id: `scope-header-${tag}`,
      headers: { ...known, tenant: text.badTenant, ...note },
      body: UNDECODABLE,
    },
    {
      label: 'a header with U+0000, an unknown type and a payload that fails the schema',
      faults: [...noteFault, 'UNKNOWN_MESSAGE_TYPE', 'INVALID_PAYLOAD'],
      id: `header-type-${tag}`,
      headers: { type: 'order.unknown', ...note },
      body: BAD_PAYLOAD,
    },
  ];
}

/**
 * The good delivery of {@link faultyDeliveries} again, under its id, with another payload
 * and two more faults: sent after the good one was handled, it is a payload conflict.
 */
export function conflictingDelivery(tag: string, text: FaultText): FaultyDelivery {
  const note: Record<string, string> = text.badHeader === undefined ? {} : { note: text.badHeader };
  return {
    label: 'a payload conflict, an undecodable body and an unknown type',
    faults: [
      'PAYLOAD_CONFLICT',
      ...(text.badHeader === undefined ? [] : (['INVALID_HEADERS'] as const)),
      'UNDECODABLE_BODY',
      'UNKNOWN_MESSAGE_TYPE',
    ],
    id: `good-${tag}`,
    headers: { type: 'order.unknown', ...note },
    body: UNDECODABLE,
  };
}

/** The header that tells a test's deliveries apart (their bodies and values repeat). */
export const CASE_HEADER = 'x-case';

/** A delivery as a broker test hands it to its broker: the body and every header as text. */
export interface SentDelivery {
  readonly body: string;
  /** The id as `message-id` where it has one, its other headers, and {@link CASE_HEADER}. */
  readonly headers: Record<string, string>;
}

/** `deliveries` as sent, numbered by {@link CASE_HEADER} from `from`. */
function sentDeliveries(deliveries: readonly FaultyDelivery[], from: number): SentDelivery[] {
  return deliveries.map((d, i) => ({
    body: d.body,
    headers: {
      ...(d.id === undefined ? {} : { 'message-id': d.id }),
      ...d.headers,
      [CASE_HEADER]: String(from + i),
    },
  }));
}

/** What a broker test sends: {@link faultyDeliveries} first, then {@link conflictingDelivery}. */
export interface FaultOrderCases {
  /** The deliveries sent first. */
  readonly first: readonly FaultyDelivery[];
  /** Every delivery in the order sent: `first`, then the conflicting copy of the good one. */
  readonly all: readonly FaultyDelivery[];
  /** The deliveries with a fault, each of which must be dead-lettered. */
  readonly bad: readonly FaultyDelivery[];
}

/** The cases of one broker test, with ids made from `tag`. */
export function faultOrderCases(tag: string, text: FaultText): FaultOrderCases {
  const first = faultyDeliveries(tag, text);
  const all = [...first, conflictingDelivery(tag, text)];
  return { first, all, bad: all.filter((d) => d.faults.length > 0) };
}

/**
 * Sends `cases.first` through `send`, waits until `settledCount` has reached their number,
 * then sends the good delivery's conflicting copy: it is a payload conflict only once the
 * good one is handled. Each is numbered by {@link CASE_HEADER} in the order of `cases.all`.
 */
export async function sendFaultOrderCases(
  cases: FaultOrderCases,
  send: (deliveries: SentDelivery[]) => Promise<unknown> | void,
  settledCount: () => number,
  waitOptions?: WaitForOptions,
): Promise<void> {
  const { first, all } = cases;
  await send(sentDeliveries(first, 0));
  await waitFor('the first deliveries settled', () => settledCount() >= first.length, waitOptions);
  await send(sentDeliveries(all.slice(first.length), first.length));
}

/**
 * Expects a copy on the dead-letter destination (`copies`, whose headers `headerOf` reads)
 * and a letter in the store (`stored`) for each bad delivery and none for the good one, and
 * each delivery's copy and letter, found by {@link CASE_HEADER}, to give the documented
 * winner among its faults as their reason.
 */
export function expectDocumentedWinners<C>(
  cases: FaultOrderCases,
  copies: readonly C[],
  headerOf: (copy: C | undefined, name: string) => unknown,
  stored: readonly DeadLetter[],
): void {
  expect(copies).toHaveLength(cases.bad.length);
  expect(stored).toHaveLength(cases.bad.length);
  const seen = cases.all.map((d, i) => {
    const copy = copies.find((c) => headerOf(c, CASE_HEADER) === String(i));
    const letter = stored.find((l) => l.headers[CASE_HEADER] === String(i));
    return [d.label, headerOf(copy, DEAD_LETTER_HEADERS.reason), letter?.reason];
  });
  const expected = cases.all.map((d) => {
    const winner = d.faults.length === 0 ? undefined : winnerOf(d.faults);
    return [d.label, winner, winner];
  });
  expect(seen).toEqual(expected);
}
