/**
 * docs/bad-input.md, "Which fault wins", by property: a delivery with any combination of
 * faults is dead-lettered under the first of them in the documented order, through
 * `process` and through `processBatch` (beside a good delivery), on both stores. The order
 * is read from the doc itself, so the doc and the inbox cannot drift apart.
 */
import fc from 'fast-check';
import { createDeadLetters, type DeadLetterReason, type Envelope, type InboxOutcome } from '../src';
import { fcRuns } from '../../../test-support/fuzz';
import {
  documentedOrder,
  faultOrderHandler,
  faultOrderInbox,
  OrderPlaced,
  winnerOf,
} from '../../../test-support/fault-order';
import { countEffects } from '../../../test-support/effects';
import { ALL_STORE_KINDS } from './db';
import { freshId, useEffectsStore } from './fixtures/inbox-support';

/** One way to fail a check, and the field it puts on the envelope. */
interface Variant<T> {
  readonly fault: DeadLetterReason;
  readonly value: T;
}

const variants = <T>(fault: DeadLetterReason, values: readonly T[]) =>
  fc.constantFrom(...values.map((value): Variant<T> => ({ fault, value })));

/** A check that may fail (a variant) or pass (`null`). */
const maybe = <T>(arb: fc.Arbitrary<Variant<T>>) => fc.option(arb, { nil: null, freq: 2 });

const idFault = maybe(
  fc.oneof(
    variants<unknown>('MISSING_MESSAGE_ID', [undefined, null]),
    variants<unknown>('INVALID_MESSAGE_ID', [
      42,
      '',
      'x'.repeat(300),
      'a\u0000b',
      'a\ud800b',
      '\ufeffid',
    ]),
  ),
);
const scopeFault = maybe(variants<unknown>('INVALID_SCOPE', ['', 's'.repeat(256), 't\u0000', 7]));
const headersFault = maybe(
  variants<unknown>('INVALID_HEADERS', [
    { note: 'x\u0000y' },
    { 'n\u0000ame': 'v' },
    { note: 'x\udc80' },
    { note: 42 },
    ['a'],
    'headers',
  ]),
);
const bodyFault = maybe(variants<unknown>('INVALID_BODY', ['\ud800{}', 42, null, { a: 1 }]));

const faultsArb = fc.record({
  id: idFault,
  scope: scopeFault,
  conflict: fc.boolean(),
  headers: headersFault,
  body: bodyFault,
  undecodable: fc.boolean(),
  exhausted: fc.boolean(),
  unknownType: fc.boolean(),
  invalidPayload: fc.boolean(),
  bytes: fc.boolean(),
  batch: fc.boolean(),
});
type Faults = typeof faultsArb extends fc.Arbitrary<infer T> ? T : never;

/** The reasons of the checks `f` fails. */
function faultsOf(f: Faults): DeadLetterReason[] {
  const listed: Array<DeadLetterReason | false> = [
    f.id?.fault ?? false,
    f.scope?.fault ?? false,
    f.conflict && 'PAYLOAD_CONFLICT',
    f.headers?.fault ?? false,
    f.body?.fault ?? false,
    f.undecodable && 'UNDECODABLE_BODY',
    f.exhausted && 'MAX_ATTEMPTS',
    f.unknownType && 'UNKNOWN_MESSAGE_TYPE',
    f.invalidPayload && 'INVALID_PAYLOAD',
  ];
  return listed.filter((r): r is DeadLetterReason => r !== false);
}

/** The envelope with exactly the faults of `f`, under a fresh id unless the id is a fault. */
function envelopeOf(f: Faults, id: string): Envelope {
  const text = f.undecodable
    ? 'not json {'
    : JSON.stringify(f.invalidPayload ? { id: 1 } : { id: 'o-1', cents: 100 });
  const body = f.body === null ? (f.bytes ? Buffer.from(text) : text) : f.body.value;
  const type = f.unknownType ? 'order.unknown' : OrderPlaced.type;
  const headers = f.headers === null ? {} : f.headers.value;
  return {
    id: f.id === null ? id : f.id.value,
    ...(f.scope === null ? {} : { scope: f.scope.value }),
    headers:
      typeof headers === 'object' && headers !== null && !Array.isArray(headers)
        ? { ...headers, type }
        : headers,
    body,
    delivery: f.exhausted ? { receiveCount: 6 } : {},
  } as Envelope;
}

describe.each(ALL_STORE_KINDS)('which fault wins, on %s', (kind) => {
  const suite = useEffectsStore(kind);

  it('the doc lists every reason a delivery can be refused for, each once', () => {
    const order = documentedOrder();
    expect(new Set(order).size).toBe(order.length);
    expect([...order].sort()).toEqual(
      [
        'MISSING_MESSAGE_ID',
        'INVALID_MESSAGE_ID',
        'INVALID_SCOPE',
        'PAYLOAD_CONFLICT',
        'INVALID_HEADERS',
        'INVALID_BODY',
        'UNDECODABLE_BODY',
        'MAX_ATTEMPTS',
        'UNKNOWN_MESSAGE_TYPE',
        'INVALID_PAYLOAD',
      ].sort(),
    );
  });

  it('a delivery with any faults is dead-lettered under the first in the documented order', async () => {
    await fc.assert(
      fc.asyncProperty(faultsArb, async (f) => {
        const consumer = freshId('order');
        const inbox = faultOrderInbox(suite.store, consumer);
        const handler = faultOrderHandler(suite.store, consumer);
        const id = freshId('m');
        const sent = envelopeOf(f, id);
        if (f.conflict) {
          // The same id and scope, handled before with another payload.
          const earlier = { ...sent, headers: { type: OrderPlaced.type }, delivery: {} };
          const first = await inbox.process(
            { ...earlier, body: JSON.stringify({ id: 'earlier', cents: 1 }) },
            handler,
          );
          if (f.id === null && f.scope === null) expect(first.status).toBe('processed');
        }
        let outcome: InboxOutcome;
        if (f.batch) {
          const good: Envelope = {
            id: freshId('good'),
            headers: { type: OrderPlaced.type },
            body: JSON.stringify({ id: 'g', cents: 2 }),
            delivery: {},
          };
          const outcomes = await inbox.processBatch([good, sent], handler);
          expect(outcomes[0]?.status).toBe('processed');
          outcome = outcomes[1]!;
        } else {
          outcome = await inbox.process(sent, handler);
        }

        const faults = faultsOf(f);
        if (faults.length === 0) {
          expect(outcome.status).toBe('processed');
          expect(await countEffects(suite.store, id)).toBe(1);
          return;
        }
        const winner = winnerOf(faults);
        expect({ faults, status: outcome.status, reason: reasonOf(outcome) }).toEqual({
          faults,
          status: 'dead-lettered',
          reason: winner,
        });
        if (outcome.status !== 'dead-lettered') return;
        const letter = await createDeadLetters(suite.store).get(outcome.deadLetterId);
        expect(letter?.reason).toBe(winner);
        expect(letter?.errorCode).toBe(winner);
      }),
      { numRuns: fcRuns(kind === 'pglite' ? 80 : 120) },
    );
  });

  it('an id handled before with the same payload answers as before, whatever else is wrong', async () => {
    const consumer = freshId('order');
    const inbox = faultOrderInbox(suite.store, consumer);
    const handler = faultOrderHandler(suite.store, consumer);
    const body = JSON.stringify({ id: 'o-1', cents: 100 });
    const handled = freshId('handled');
    const dead = freshId('dead');
    const headers = { type: OrderPlaced.type };
    expect(
      (await inbox.process({ id: handled, headers, body, delivery: {} }, handler)).status,
    ).toBe('processed');
    const first = await inbox.process(
      { id: dead, headers: { ...headers, note: 'x\u0000' }, body, delivery: {} },
      handler,
    );
    expect(reasonOf(first)).toBe('INVALID_HEADERS');

    // A header fault, an undecodable body and exhausted attempts, all after the record.
    const again = (messageId: string) =>
      inbox.process(
        {
          id: messageId,
          headers: { ...headers, note: 'x\u0000' },
          body,
          delivery: { receiveCount: 9 },
        },
        handler,
      );
    expect((await again(handled)).status).toBe('duplicate');
    const second = await again(dead);
    expect(reasonOf(second)).toBe('INVALID_HEADERS');
    expect(second.status === 'dead-lettered' && second.deadLetterId).toBe(
      first.status === 'dead-lettered' && first.deadLetterId,
    );
  });
});

function reasonOf(outcome: InboxOutcome): string | undefined {
  return outcome.status === 'dead-lettered' ? outcome.reason : undefined;
}
