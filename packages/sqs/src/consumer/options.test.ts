import { hasErrorCode, type Inbox } from '@justonce/core';
import { resolveWorkerOptions } from './options';
import type { SqsWorkerOptions } from './types';

const inbox: Inbox = {
  consumer: 'c',
  process: async () => ({ status: 'duplicate', messageId: 'm', scope: 'default' }),
  processBatch: async () => [],
};
const base: SqsWorkerOptions = {
  queueUrl: 'http://localhost:9324/000000000000/jobs',
  inbox,
  handler: async () => undefined,
};

function problem(over: Partial<SqsWorkerOptions>): unknown {
  try {
    resolveWorkerOptions({ ...base, ...over } as SqsWorkerOptions);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('resolveWorkerOptions', () => {
  it('applies the documented defaults', () => {
    expect(resolveWorkerOptions(base)).toMatchObject({
      mode: 'message',
      concurrency: 10,
      waitTimeSeconds: 20,
      visibilityTimeoutSeconds: undefined,
      heartbeatEnabled: true,
      heartbeatIntervalMs: undefined,
      retry: { baseMs: 1_000, capMs: 300_000 },
      deadLetterQueueUrl: undefined,
      messageId: { attribute: 'message-id', fallbackToSqsMessageId: true },
      scopeAttribute: 'tenant',
      shutdownTimeoutMs: 30_000,
    });
  });

  it.each<[string, Partial<SqsWorkerOptions>]>([
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
    ['a dead-letter queue that is the queue', { deadLetterQueueUrl: base.queueUrl }],
    ['a dead-letter queue name', { deadLetterQueueUrl: 'dlq' }],
    ['decode with a ready inbox', { decode: () => undefined }],
    ['a bad message id attribute', { messageId: { attribute: 'AWS.id' } }],
    ['a retry cap below its base', { retry: { baseMs: 5_000, capMs: 1_000 } }],
    ['inbox settings without a store', { inbox: { consumer: 'c' } as never }],
  ])('refuses %s with a ConfigurationError', (_, over) => {
    expect(hasErrorCode(problem(over), 'INVALID_CONFIG')).toBe(true);
  });
});
