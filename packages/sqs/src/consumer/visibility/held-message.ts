import type { Message } from '@aws-sdk/client-sqs';

/** A message the consumer received and has not settled yet. @internal */
export interface HeldMessage {
  /** Consumer-unique number, used as the entry id of batch requests. */
  readonly seq: number;
  readonly message: Message;
  readonly receiptHandle: string;
  /**
   * Aborted (as the handler's `ctx.signal`) when the delivery went stale or on forced
   * shutdown. In batch mode the messages of one receive batch share it, since they are
   * handled together: one going stale aborts the batch.
   */
  readonly controller: AbortController;
  /** The message id found for it, once its envelope was built (for `onSettled`). */
  messageId?: string | undefined;
}
