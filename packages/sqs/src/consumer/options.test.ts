import { hasErrorCode, type Inbox } from '@justonce/core';
import { resolveConsumerOptions } from './options';
import type { SqsConsumerOptions } from './types';

const inbox: Inbox = {
  consumer: 'c',
  process: async () => ({ status: 'duplicate', messageId: 'm', scope: 'default' }),
  processBatch: async () => [],
  flushActivity: async () => undefined,
};
const base: SqsConsumerOptions = {
  queueUrl: 'http://localhost:9324/000000000000/jobs',
  inbox,
  handler: async () => undefined,
};

function problem(over: Partial<SqsConsumerOptions>): unknown {
  try {
    resolveConsumerOptions({ ...base, ...over } as SqsConsumerOptions);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('resolveConsumerOptions', () => {
  it('refuses a meter without createCounter, saying so, and takes one with it', () => {
    for (const meter of [{}, { createCounter: 'no' }, 'meter', null]) {
      const error = problem({ meter } as unknown as Partial<SqsConsumerOptions>);
      expect(hasErrorCode(error, 'INVALID_CONFIG')).toBe(true);
      expect((error as Error).message).toContain('createCounter');
    }
    const counter = { add: () => undefined };
    const meter = { createCounter: () => counter } as unknown as SqsConsumerOptions['meter'];
    expect(resolveConsumerOptions({ ...base, meter }).meter).toBe(meter);
  });

  it('applies the documented defaults', () => {
    expect(resolveConsumerOptions(base)).toMatchObject({
      mode: 'message',
      concurrency: 10,
      waitTimeSeconds: 20,
      visibilityTimeoutSeconds: undefined,
      heartbeatEnabled: true,
      heartbeatIntervalMs: undefined,
      retry: { baseMs: 1_000, capMs: 300_000 },
      deadLetterQueueUrl: undefined,
      messageId: { header: 'message-id', fallback: true },
      scopeHeader: 'tenant',
      shutdownTimeoutMs: 30_000,
    });
  });

  it.each<[string, Partial<SqsConsumerOptions>]>([
    ['a queue name instead of a URL', { queueUrl: 'jobs' }],
    ['no handler', { handler: undefined as never }],
    ['no inbox', { inbox: undefined as never }],
    ['a concurrency of 0', { concurrency: 0 }],
    ['an unknown mode', { mode: 'bulk' as never }],
    ['a wait over 20 seconds', { waitTimeSeconds: 21 }],
    ['a visibility over 12 hours', { visibilityTimeoutSeconds: 43_201 }],
    [
      'a heartbeat as slow as the visibility',
      { visibilityTimeoutSeconds: 2, heartbeat: { intervalMs: 2_000 } },
    ],
    ['a dead-letter queue that is the queue', { deadLetter: { queueUrl: base.queueUrl } }],
    ['a dead-letter queue name', { deadLetter: { queueUrl: 'dlq' } }],
    ['a dead-letter option that is not an object', { deadLetter: 'dlq' as never }],
    ['a bad message id attribute', { messageId: { header: 'AWS.id' } }],
    ['a message id fallback that is not a boolean', { messageId: { fallback: 'no' as never } }],
    ['a bad scope attribute', { scopeHeader: 'a..b' }],
    ['a retry cap below its base', { retry: { baseMs: 5_000, capMs: 1_000 } }],
    ['inbox settings instead of an inbox', { inbox: { consumer: 'c' } as never }],
  ])('refuses %s with a ConfigurationError', (_, over) => {
    expect(hasErrorCode(problem(over), 'INVALID_CONFIG')).toBe(true);
  });
});
