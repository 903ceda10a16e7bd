import { JustonceError } from '../../errors/justonce-error';

/**
 * Which part of an `add` call was refused: a part of an {@link OutboxEvent}, or of the call's
 * options (`options`, `cause`, `startIndex`; `index` is then 0).
 */
export type InvalidEventField =
  | 'event'
  | 'destination'
  | 'key'
  | 'payload'
  | 'headers'
  | 'messageId'
  | 'options'
  | 'cause'
  | 'startIndex';

/**
 * An event handed to `outbox.add` cannot be stored: no destination, a payload that cannot be
 * serialized, a partition key over the limit, a malformed header or message id, text that
 * PostgreSQL cannot store exactly (U+0000, a lone UTF-16 surrogate), a message id given twice
 * in one call, or malformed `cause`/`startIndex` options. Thrown before any SQL runs, so the
 * caller's transaction stays usable.
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
