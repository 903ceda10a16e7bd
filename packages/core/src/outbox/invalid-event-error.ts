import { JustonceError } from '../errors/justonce-error';

/** Which part of an {@link OutboxEvent} was refused. */
export type InvalidEventField =
  'event' | 'destination' | 'key' | 'payload' | 'headers' | 'messageId';

/**
 * An event handed to `outbox.add` cannot be stored: no destination, a payload that cannot be
 * serialized, a partition key over the limit, a malformed header or message id. Thrown
 * before anything is written, inside the caller's transaction.
 */
export class InvalidEventError extends JustonceError {
  /** The refused part of the event. */
  readonly field: InvalidEventField;
  /** Position of the event in the array given to `add`. */
  readonly index: number;

  constructor(field: InvalidEventField, index: number, message: string, cause?: unknown) {
    super('INVALID_EVENT', `outbox event #${index}: ${message}`, {
      retriable: false,
      cause,
      details: { field, index },
    });
    this.field = field;
    this.index = index;
  }
}
