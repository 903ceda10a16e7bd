import type { DeliveryFacts, Envelope } from '../transport/envelope';

/**
 * Why a message was dead-lettered:
 * - `MISSING_MESSAGE_ID` — the delivery had no id, so it cannot be deduplicated;
 * - `INVALID_MESSAGE_ID` — the id is not a string, is empty, is longer than `maxIdLength`,
 *   or holds text the store cannot keep exactly (U+0000, a lone UTF-16 surrogate);
 * - `INVALID_SCOPE` — the scope is not a non-empty string of at most 255 bytes, or holds
 *   such text;
 * - `INVALID_HEADERS` — the headers are not an object of strings, or a name or value holds
 *   such text;
 * - `INVALID_BODY` — the body is neither bytes nor a string, or is a string with a lone
 *   surrogate;
 * - `UNDECODABLE_BODY` — the inbox's `decode` option threw;
 * - `PAYLOAD_CONFLICT` — the id was seen before with a different payload fingerprint;
 * - `MAX_ATTEMPTS` — failed (or crashed the process) `maxAttempts` times;
 * - `NON_RETRIABLE` — the handler threw an error that retrying cannot fix;
 * - `INVALID_PAYLOAD` — a typed message's body is not JSON or fails its schema
 *   (`InvalidPayloadError`, thrown by a `messageHandler` route; the issues are in the letter's
 *   error message);
 * - `UNKNOWN_MESSAGE_TYPE` — a `messageHandler` has no route for the message's `type` header,
 *   or the message has none (`UnknownMessageTypeError`);
 * - `RETRY_BUDGET_SPENT` — the handler failed and the consumer's retry budget would not pay
 *   for the retry, with `resilience.budget.whenSpent: 'dead-letter'` (`RetryBudgetSpentError`).
 */
export type DeadLetterReason =
  | 'MISSING_MESSAGE_ID'
  | 'INVALID_MESSAGE_ID'
  | 'INVALID_SCOPE'
  | 'INVALID_HEADERS'
  | 'INVALID_BODY'
  | 'UNDECODABLE_BODY'
  | 'PAYLOAD_CONFLICT'
  | 'MAX_ATTEMPTS'
  | 'NON_RETRIABLE'
  | 'INVALID_PAYLOAD'
  | 'UNKNOWN_MESSAGE_TYPE'
  | 'RETRY_BUDGET_SPENT';

/** One message that could not be handled, as stored; nothing of the delivery is lost. */
export interface DeadLetter {
  /** The letter's id (a decimal string); pass it to `get`, `requeue` and `delete`. */
  readonly id: string;
  readonly scope: string;
  readonly consumer: string;
  /**
   * The message id as delivered; `null` when the delivery had none. Like `scope`, `key`,
   * `headers` and `body`, it is given back exactly, even where it held U+0000 or a lone
   * surrogate (kept aside as JSON; the table's text columns show an escaped form).
   */
  readonly messageId: string | null;
  /** See {@link DeadLetterReason}. */
  readonly reason: DeadLetterReason;
  /** `code` of the error that led here (e.g. `MAX_ATTEMPTS`, or the handler error's code). */
  readonly errorCode: string | null;
  /** Message of that error; never the payload. */
  readonly errorMessage: string | null;
  /** Deliveries counted before the message was dead-lettered (0 for bad input). */
  readonly attempts: number;
  /** The envelope's partition key, if any. */
  readonly key: string | null;
  /** The headers as delivered; a value that was not a string is kept as its JSON text. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body exactly as delivered: a string stays a string, bytes stay bytes. */
  readonly body: Uint8Array | string;
  /** The delivery facts of the delivery that was dead-lettered. */
  readonly delivery: DeliveryFacts;
  /** The payload fingerprint (SHA-256, hex) the inbox computed. */
  readonly fingerprint: string;
  /** When the first counted attempt started, when attempts were counted. */
  readonly firstAttemptAt: Date | null;
  /** When the message was (last) dead-lettered. */
  readonly deadAt: Date;
  /** When the letter was last requeued; `null` while it waits. */
  readonly requeuedAt: Date | null;
}

/** Options of {@link DeadLetters.list}. */
export interface ListDeadLettersOptions {
  /** Only letters of this consumer. */
  readonly consumer?: string;
  /** Only letters of this scope. */
  readonly scope?: string;
  /** Only letters with this reason. */
  readonly reason?: DeadLetterReason;
  /** Only letters dead-lettered at or after this time (`deadAt`). */
  readonly since?: Date;
  /** Only letters dead-lettered before this time. */
  readonly until?: Date;
  /** Only these letters (at most 1000 ids). */
  readonly ids?: readonly string[];
  /** Include letters that were already requeued. Default `true`. */
  readonly includeRequeued?: boolean;
  /** Most letters to return, 1–1000. Default 100. */
  readonly limit?: number;
  /** Cursor: return letters with an id greater than this one (the last id of the previous page). */
  readonly after?: string;
}

/**
 * Dead letters in a store: list, inspect, requeue and delete what the inbox could not
 * handle. Letters are ordered by id, which grows with time.
 */
export interface DeadLetters {
  /** Letters in id order, filtered and paged by `options`. */
  list(options?: ListDeadLettersOptions): Promise<DeadLetter[]>;
  /** One letter, or `undefined` when there is none with that id. */
  get(id: string): Promise<DeadLetter | undefined>;
  /**
   * Makes the message processable again: removes the dead-letter marker and the attempt
   * count of its `(scope, consumer, message id)`, stamps `requeuedAt`, and returns the stored
   * envelope for the caller to redeliver (through its transport, or straight to
   * `inbox.process`). The returned delivery facts are fresh (only `source` is kept), so the
   * old receive count does not dead-letter it again at once. A payload-conflict letter keeps
   * the original's record: redelivering it is a conflict again. Throws
   * {@link DeadLetterNotFoundError} for an unknown id.
   */
  requeue(id: string): Promise<Envelope>;
  /**
   * Deletes a letter for good; `true` when one was deleted. The message stays marked as
   * handled, so later redeliveries of it are acknowledged as duplicates.
   */
  delete(id: string): Promise<boolean>;
}
