import { JustonceError } from '../../errors/justonce-error';

/**
 * An event's message id is already in the outbox (added by an earlier, committed
 * transaction, or earlier in the same one). Nothing of that `add` call was written, not even
 * its other events; the caller's transaction is still usable, and the caller decides whether
 * this is a harmless repeat or a bug. (An id given twice within one call is an
 * `InvalidEventError` instead.) On a store with `distribution: 'distributable'` an id is
 * unique per distribution key only: the same id under another key is another event
 * (docs/scaling.md).
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
