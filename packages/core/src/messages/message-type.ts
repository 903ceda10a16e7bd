import type { StandardSchemaV1 } from '@standard-schema/spec';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { unstorableText } from '../common/text';

/** The header a typed message carries its type in; `messageHandler` routes on it. */
export const MESSAGE_TYPE_HEADER = 'type';

/** Longest message type, in characters. */
const MAX_TYPE_LENGTH = 200;

/** Marks the values {@link defineMessage} makes, across copies of the package. */
const MESSAGE_TYPE_MARK = Symbol.for('@justonce/core/message-type');

/** Options of {@link defineMessage}. */
export interface DefineMessageOptions<S extends StandardSchemaV1> {
  /** The `type` header value, e.g. `order.created`: 1–200 characters of storable text. */
  readonly type: string;
  /** The payload's schema: any Standard Schema validator (zod 4, valibot, arktype, …). */
  readonly schema: S;
  /** Where `outbox.add` sends the message when its options name no destination. */
  readonly destination?: string;
  /** The partition key of a payload; `outbox.add`'s `key` option overrides it. */
  readonly key?: (payload: StandardSchemaV1.InferInput<S>) => string | null | undefined;
}

/**
 * A kind of message: its `type` header, the schema of its payload, and where and under which
 * key `outbox.add` writes it by default. Made by {@link defineMessage} (only its values are
 * recognised by `outbox.add` and `on`); immutable.
 */
export interface MessageType<S extends StandardSchemaV1 = StandardSchemaV1> {
  /** The `type` header value. */
  readonly type: string;
  /** The payload's schema. */
  readonly schema: S;
  /** The default destination, if one was given. */
  readonly destination: string | undefined;
  /** The partition key of `payload` by the `key` option; `undefined` when there is none. */
  key(payload: StandardSchemaV1.InferInput<S>): string | null | undefined;
}

/** What `outbox.add` takes for a message type: its schema's input type. */
export type MessagePayload<M extends MessageType> = StandardSchemaV1.InferInput<M['schema']>;

/** What a typed handler receives for a message type: its schema's output type. */
export type MessageData<M extends MessageType> = StandardSchemaV1.InferOutput<M['schema']>;

const DEFINE_KEYS = optionKeys<DefineMessageOptions<StandardSchemaV1>>()([
  'type',
  'schema',
  'destination',
  'key',
]);

/** True for a value {@link defineMessage} made, by any copy of this package. @internal */
export function isMessageType(value: unknown): value is MessageType {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[MESSAGE_TYPE_MARK] === true
  );
}

function checkType(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_TYPE_LENGTH) {
    throw new ConfigurationError(
      `defineMessage: type must be a non-blank string of at most ${MAX_TYPE_LENGTH} characters`,
      { type: typeof value === 'string' ? `${value.length} characters` : typeof value },
    );
  }
  const why = unstorableText(value);
  if (why !== undefined) {
    throw new ConfigurationError(`defineMessage: type ${why}`, { type: 'unstorable text' });
  }
  return value;
}

/** Refuses anything without a `~standard.validate` function; never touches a getter twice. */
function checkSchema(value: unknown): void {
  let validate: unknown;
  if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
    try {
      const standard = (value as { '~standard'?: unknown })['~standard'];
      validate =
        typeof standard === 'object' && standard !== null
          ? (standard as { validate?: unknown }).validate
          : undefined;
    } catch {
      validate = undefined;
    }
  }
  if (typeof validate !== 'function') {
    throw new ConfigurationError(
      'defineMessage: schema must be a Standard Schema (zod 4, valibot, arktype, …): a value with a `~standard.validate` function',
      { schema: value === null ? 'null' : typeof value },
    );
  }
}

function checkDestination(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ConfigurationError('defineMessage: destination must be a non-empty string', {
      destination: typeof value,
    });
  }
  const why = unstorableText(value);
  if (why !== undefined) {
    throw new ConfigurationError(`defineMessage: destination ${why}`, {
      destination: 'unstorable text',
    });
  }
  return value;
}

/**
 * Defines a kind of message: the `type` header it travels with and the Standard Schema its
 * payload must pass. `outbox.add(trx, message, payload)` validates the payload before writing
 * it; `messageHandler({ routes: [on(message, handler)] })` routes deliveries by their `type`
 * header and hands each handler the schema's output. Options are checked here: a bad or
 * unknown option is a {@link ConfigurationError}.
 *
 * @example
 * ```ts
 * const OrderCreated = defineMessage({
 *   type: 'order.created',
 *   schema: z.object({ orderId: z.string(), total: z.number().positive() }),
 *   destination: 'orders',
 *   key: (order) => order.orderId,
 * });
 * ```
 */
export function defineMessage<S extends StandardSchemaV1>(
  options: DefineMessageOptions<S>,
): MessageType<S> {
  rejectUnknownOptions(options, DEFINE_KEYS, 'defineMessage');
  const type = checkType(options.type);
  const { schema } = options;
  checkSchema(schema);
  const destination = checkDestination(options.destination);
  const keyOf = options.key;
  if (keyOf !== undefined && typeof keyOf !== 'function') {
    throw new ConfigurationError('defineMessage: key must be a function of the payload', {
      key: typeof keyOf,
    });
  }
  const message: MessageType<S> = {
    type,
    schema,
    destination,
    key: (payload) => (keyOf === undefined ? undefined : keyOf(payload)),
  };
  Object.defineProperty(message, MESSAGE_TYPE_MARK, { value: true });
  return Object.freeze(message);
}
