import type { KafkaRecord } from './client';
import { headerOf } from './headers';

/** Where the message id of a consumed record is looked up, in order. */
export interface MessageIdOptions {
  /** Header holding the id. Default `message-id`. */
  readonly header?: string;
  /**
   * Derives an id from the record when the header is absent, e.g. from a field of the body.
   * Return `undefined` when the record has none; a throw counts as none (and is logged).
   */
  readonly extract?: (record: KafkaRecord, topic: string, partition: number) => string | undefined;
  /**
   * When neither the header nor `extract` gives an id, use `<topic>/<partition>/<offset>`.
   * Default true.
   *
   * This protects against the redeliveries Kafka itself makes: a crash or rebalance after
   * the database commit but before the offset commit delivers the same record at the same
   * offset again, and it is recognised as a duplicate. It does not protect against a
   * producer that sends the same logical message twice (the copies sit at different
   * offsets, so both are processed), and it is wrong after a topic is deleted and
   * re-created or its records are copied to another cluster, where one offset can name a
   * different message (a new message would be taken for a duplicate and skipped). When
   * false, a record without an id is dead-lettered with reason `MISSING_MESSAGE_ID`.
   */
  readonly fallbackToOffset?: boolean;
}

/**
 * The id of a record by the rules of {@link MessageIdOptions}, or `undefined`. Never throws
 * (neither a throwing `extract` nor a throwing `onExtractError`): a throw here would fail
 * the record's whole chunk on every delivery. A header value that is not usable text is
 * returned as it is, not replaced by the offset, so that the inbox dead-letters the record
 * (`INVALID_MESSAGE_ID`) instead of handling it under an id its producer never gave it.
 */
export function resolveMessageId(
  record: KafkaRecord,
  headers: Readonly<Record<string, string>>,
  topic: string,
  partition: number,
  options: Required<Pick<MessageIdOptions, 'header' | 'fallbackToOffset'>> &
    Pick<MessageIdOptions, 'extract'>,
  onExtractError: (error: unknown) => void,
): string | undefined {
  const fromHeader = headerOf(headers, options.header);
  if (fromHeader !== undefined && fromHeader !== '') return fromHeader;
  if (options.extract) {
    try {
      const extracted = options.extract(record, topic, partition);
      if (typeof extracted === 'string' && extracted !== '') return extracted;
    } catch (error) {
      try {
        onExtractError(error);
      } catch {
        // Only the report failed; the record still goes on, without an id.
      }
      return undefined;
    }
  }
  return options.fallbackToOffset ? `${topic}/${partition}/${String(record.offset)}` : undefined;
}
