import type { SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import type { OutgoingMessage } from '@justonce/core/transport';

/**
 * One message ready for a `SendMessageBatch` request (without its batch `Id`). A module of
 * its own, types only: `entry.ts` builds these and `plan.ts` cuts them into batches, and
 * `entry.ts` needs `plan.ts`'s batch size, so the type living in either one made them import
 * each other. @internal
 */
export interface PreparedEntry {
  readonly index: number;
  readonly message: OutgoingMessage;
  readonly entry: Omit<SendMessageBatchRequestEntry, 'Id'>;
  /** Bytes SQS counts for it. */
  readonly bytes: number;
}
