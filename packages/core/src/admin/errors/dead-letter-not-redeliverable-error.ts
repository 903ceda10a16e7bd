import { JustonceError } from '../../errors/justonce-error';

/**
 * A dead letter that cannot go back through the outbox: it has no message id (the outbox
 * needs one, and a consumer could not deduplicate it), or its id, key or headers hold text
 * the outbox cannot store exactly. Nothing was changed. Requeue it with
 * `deadLetters.requeue` and hand the envelope to the inbox yourself instead.
 */
export class DeadLetterNotRedeliverableError extends JustonceError {
  constructor(id: string, why: string) {
    super('DEAD_LETTER_NOT_REDELIVERABLE', `dead letter ${id} cannot be redelivered: ${why}`, {
      retriable: false,
      details: { id, why },
    });
  }
}
