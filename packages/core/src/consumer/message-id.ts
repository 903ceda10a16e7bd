/**
 * Where a consumer finds the message id the inbox deduplicates on, the same in every
 * transport: the header (an SQS message attribute, an AMQP header), then `extract`, then the
 * broker's own identity of the message when `fallback` allows it.
 */
export interface MessageIdOptions<M = unknown> {
  /** Header holding the id. Default `message-id` (what justonce's publishers write). */
  readonly header?: string;
  /**
   * Derives an id from the broker's message when the header is absent, e.g. from a field of
   * the body. Return `undefined` when it has none; a throw counts as none (and is logged).
   */
  readonly extract?: (message: M) => string | undefined;
  /**
   * When neither gives an id, use the broker's identity of the message (see each transport:
   * Kafka's topic/partition/offset, SQS's `MessageId`, AMQP's `message-id` property).
   * Default true. It recognises the broker's own redeliveries, not a producer that sent the
   * same thing twice. When false, a message without an id is dead-lettered
   * (`MISSING_MESSAGE_ID`).
   */
  readonly fallback?: boolean;
}

/** {@link MessageIdOptions} with defaults applied. @internal */
export interface ResolvedMessageId<M> {
  readonly header: string;
  readonly extract: ((message: M) => string | undefined) | undefined;
  readonly fallback: boolean;
}

/** The header justonce's publishers write the message id to. */
export const DEFAULT_MESSAGE_ID_HEADER = 'message-id';

/** Applies the defaults of {@link MessageIdOptions}. @internal */
export function resolveMessageIdOptions<M>(
  options: MessageIdOptions<M> | undefined,
): ResolvedMessageId<M> {
  return {
    header: options?.header ?? DEFAULT_MESSAGE_ID_HEADER,
    extract: options?.extract,
    fallback: options?.fallback ?? true,
  };
}

/** A header's value, by name, case-insensitively (brokers and proxies change header case). */
function headerValue(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  if (Object.hasOwn(headers, name)) return headers[name];
  const lower = name.toLowerCase();
  for (const key of Object.keys(headers)) if (key.toLowerCase() === lower) return headers[key];
  return undefined;
}

/**
 * The message id by the rules of {@link MessageIdOptions}, or `undefined`. `brokerId` gives
 * the broker's identity of the message, for the fallback. Never throws (neither a throwing
 * `extract` nor a throwing `onExtractError`): a throw here would bring the message back
 * forever. A header value that is not usable text is returned as it is, not replaced by the
 * fallback, so the inbox dead-letters it (`INVALID_MESSAGE_ID`) rather than handling it
 * under an id its producer never gave it. @internal
 */
export function findMessageId<M>(
  message: M,
  headers: Readonly<Record<string, string>>,
  options: ResolvedMessageId<M>,
  brokerId: () => unknown,
  onExtractError: (error: unknown) => void,
): string | undefined {
  const fromHeader = headerValue(headers, options.header);
  if (fromHeader !== undefined && fromHeader !== '') return fromHeader;
  if (options.extract) {
    try {
      const extracted = options.extract(message);
      if (typeof extracted === 'string' && extracted !== '') return extracted;
    } catch (error) {
      try {
        onExtractError(error);
      } catch {
        // Only the report failed; the message still goes on, without an id.
      }
      return undefined;
    }
  }
  if (!options.fallback) return undefined;
  const id = brokerId();
  // A broker id that is not a string goes on unchanged: the inbox dead-letters it as
  // INVALID_MESSAGE_ID instead of deduplicating on a made-up text.
  return id === undefined || id === null || id === '' ? undefined : (id as string);
}
