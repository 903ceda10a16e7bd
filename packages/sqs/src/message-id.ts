import type { Message } from '@aws-sdk/client-sqs';
import { headerOf } from './attributes';

/** Where the worker finds the message id the inbox dedupes on, in order. */
export interface SqsMessageIdOptions {
  /** Message attribute holding the id. Default `message-id` (what the SQS publisher writes). */
  readonly attribute?: string;
  /**
   * Derives an id from the message when the attribute is absent, e.g. from a field of the
   * body. Return `undefined` when the message has none; a throw counts as none (and is
   * logged).
   */
  readonly extract?: (message: Message) => string | undefined;
  /**
   * When neither the attribute nor `extract` gives an id, use the SQS `MessageId`.
   * Default `true`.
   *
   * This protects against the redeliveries SQS itself makes (a visibility timeout running
   * out while a handler works, a crash after the database commit and before the delete): a
   * redelivery keeps its `MessageId`. It does not protect against a producer that sends the
   * same thing twice: each send gets a new `MessageId`, so both copies are processed. When
   * `false`, a message without an id is dead-lettered with reason `MISSING_MESSAGE_ID`.
   */
  readonly fallbackToSqsMessageId?: boolean;
}

/** {@link SqsMessageIdOptions} with defaults applied. @internal */
export interface ResolvedMessageIdOptions {
  readonly attribute: string;
  readonly extract: ((message: Message) => string | undefined) | undefined;
  readonly fallbackToSqsMessageId: boolean;
}

/**
 * The id of a received message by the rules of {@link SqsMessageIdOptions}, or `undefined`.
 * `headers` are the message's string attributes. Never throws (neither a throwing `extract`
 * nor a throwing `onExtractError`): a throw here would bring the message back forever.
 */
export function resolveMessageId(
  message: Message,
  headers: Readonly<Record<string, string>>,
  options: ResolvedMessageIdOptions,
  onExtractError: (error: unknown) => void,
): string | undefined {
  const fromAttribute = headerOf(headers, options.attribute);
  if (fromAttribute !== undefined && fromAttribute !== '') return fromAttribute;
  if (options.extract) {
    try {
      const extracted = options.extract(message);
      if (typeof extracted === 'string' && extracted !== '') return extracted;
    } catch (error) {
      try {
        onExtractError(error);
      } catch {
        // Only a report failed; the message still goes on (without an id).
      }
      return undefined;
    }
  }
  if (!options.fallbackToSqsMessageId) return undefined;
  const sqsId: unknown = message.MessageId;
  // A MessageId that is not a string (SQS never sends one) goes on unchanged: the inbox
  // dead-letters it as INVALID_MESSAGE_ID instead of deduping on a made-up text.
  return sqsId === undefined || sqsId === null || sqsId === '' ? undefined : (sqsId as string);
}
