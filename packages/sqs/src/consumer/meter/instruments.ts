import type { SqsMeter } from '../types';

/** The consumer's counters. @internal */
export interface ConsumerInstruments {
  received(count: number): void;
  deleted(count: number): void;
  deleteFailed(count: number): void;
  extended(count: number): void;
  receiveFailed(): void;
  deadLetterForwarded(): void;
}

/**
 * Creates the consumer's OpenTelemetry counters on `m` (the resolved meter option), labelled
 * with the queue URL. @internal
 */
export function createConsumerInstruments(m: SqsMeter, queueUrl: string): ConsumerInstruments {
  const attrs = { 'sqs.queue_url': queueUrl };
  const counter = (name: string, description: string) => {
    const c = m.createCounter(name, { description });
    return (n = 1) => {
      if (n > 0) c.add(n, attrs);
    };
  };
  const received = counter('justonce.sqs.received', 'Messages received from SQS');
  const deleted = counter('justonce.sqs.deleted', 'Messages deleted after their outcome');
  const deleteFailed = counter('justonce.sqs.delete_failed', 'Deletes that failed for good');
  const extended = counter('justonce.sqs.visibility_extended', 'Heartbeat visibility extensions');
  const receiveFailed = counter('justonce.sqs.receive_failed', 'ReceiveMessage calls that failed');
  const forwarded = counter('justonce.sqs.dead_letter_forwarded', 'Messages sent to the DLQ');
  return {
    received,
    deleted,
    deleteFailed,
    extended,
    receiveFailed: () => receiveFailed(1),
    deadLetterForwarded: () => forwarded(1),
  };
}
