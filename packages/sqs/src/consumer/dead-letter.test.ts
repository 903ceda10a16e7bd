import type { Message } from '@aws-sdk/client-sqs';
import { DEAD_LETTER_HEADERS, type DeadLetterFacts } from '@justonce/core/transport';
import { deadLetterAttributes } from './dead-letter';

const facts: DeadLetterFacts = {
  reason: 'MAX_ATTEMPTS',
  errorCode: 'E_BOOM',
  error: 'boom',
  attempts: 3,
  messageId: 'm-1',
  scope: 'acme',
  consumer: 'billing',
  source: 'http://localhost:9324/000000000000/jobs',
  deadLetterId: 'dl-1',
  at: new Date('2026-01-02T03:04:05.000Z'),
};

const text = (value: string) => ({ DataType: 'String', StringValue: value });

describe('deadLetterAttributes', () => {
  it("keeps the message's own attributes and adds every fact under core's names", () => {
    const message: Message = { MessageAttributes: { 'message-id': text('m-1') } };
    const attributes = deadLetterAttributes(message, facts);
    expect(attributes['message-id']).toEqual(text('m-1'));
    expect(attributes[DEAD_LETTER_HEADERS.reason]).toEqual(text('MAX_ATTEMPTS'));
    expect(attributes[DEAD_LETTER_HEADERS.deadLetterId]).toEqual(text('dl-1'));
    expect(attributes[DEAD_LETTER_HEADERS.attempts]).toEqual(text('3'));
    expect(attributes[DEAD_LETTER_HEADERS.at]).toEqual(text('2026-01-02T03:04:05.000Z'));
    // SQS's limit: 1 own + 9 facts; the one left out is the last in line (the scope).
    expect(Object.keys(attributes)).toHaveLength(10);
    expect(attributes[DEAD_LETTER_HEADERS.scope]).toBeUndefined();
    expect(Object.keys(attributes).some((name) => name.startsWith('x-dead-letter-'))).toBe(false);
  });

  it('puts the reason and the letter id first when few slots are left, and never replaces an own attribute', () => {
    const own = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`a${i}`, text(String(i))]));
    const message: Message = {
      MessageAttributes: { ...own, [DEAD_LETTER_HEADERS.reason]: text('mine') },
    };
    const attributes = deadLetterAttributes(message, facts);
    expect(Object.keys(attributes)).toHaveLength(10);
    expect(attributes[DEAD_LETTER_HEADERS.reason]).toEqual(text('mine'));
    expect(attributes[DEAD_LETTER_HEADERS.deadLetterId]).toEqual(text('dl-1'));
    expect(attributes[DEAD_LETTER_HEADERS.consumer]).toEqual(text('billing'));
  });

  it('leaves out a fact SQS would refuse (U+0000, a lone surrogate) and keeps the rest', () => {
    const attributes = deadLetterAttributes(
      {},
      { ...facts, messageId: 'a\u0000b', scope: 'x\uD800y' },
    );
    expect(attributes[DEAD_LETTER_HEADERS.messageId]).toBeUndefined();
    expect(attributes[DEAD_LETTER_HEADERS.scope]).toBeUndefined();
    expect(attributes[DEAD_LETTER_HEADERS.reason]).toEqual(text('MAX_ATTEMPTS'));
  });
});
