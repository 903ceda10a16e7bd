import { JustonceError } from '../errors/justonce-error';

/**
 * An event's message id is already in the outbox (added by an earlier, committed
 * transaction). Nothing of that `add` call was written; the caller's transaction is still
 * usable, and the caller decides whether this is a harmless repeat or a bug.
 */
export class DuplicateMessageIdError extends JustonceError {
  /** The message ids that were already present. */
  readonly messageIds: readonly string[];

  constructor(messageIds: readonly string[]) {
    super('DUPLICATE_MESSAGE_ID', `message id already in the outbox: ${messageIds.join(', ')}`, {
      retriable: false,
      details: { messageIds },
    });
    this.messageIds = messageIds;
  }
}
