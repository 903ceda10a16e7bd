import { JustonceError } from '../../errors/justonce-error';
import { storableDiagnostic } from '../../common/text';
import { MESSAGE_TYPE_HEADER } from '../message-type';
import { shownType } from './invalid-payload-error';

/** Routed types named in the message; the rest are counted. */
const TYPES_IN_MESSAGE = 20;

/**
 * A message reached a `messageHandler` with no `type` header, or with a type none of its
 * routes handles, and its `unknownType` is `'dead-letter'` (the default). Retrying cannot
 * help (`retriable` false): the inbox dead-letters the message at once with reason
 * `UNKNOWN_MESSAGE_TYPE`.
 */
export class UnknownMessageTypeError extends JustonceError {
  /** Dead-letter reason the inbox records for this error. */
  readonly deadLetterReason = 'UNKNOWN_MESSAGE_TYPE' as const;
  /** The `type` header as delivered; `undefined` when the message had none. */
  readonly messageType: string | undefined;
  /** The types the handler routes. */
  readonly knownTypes: readonly string[];

  constructor(messageType: string | undefined, knownTypes: readonly string[]) {
    const listed = knownTypes.slice(0, TYPES_IN_MESSAGE).map(shownType).join(', ');
    const more = knownTypes.length - TYPES_IN_MESSAGE;
    const routes = `routes: ${listed === '' ? 'none' : listed}${more > 0 ? ` and ${more} more` : ''}`;
    super(
      'UNKNOWN_MESSAGE_TYPE',
      messageType === undefined
        ? `the message has no "${MESSAGE_TYPE_HEADER}" header (${routes})`
        : `no route for message type ${shownType(messageType)} (${routes})`,
      {
        retriable: false,
        details: {
          messageType:
            messageType === undefined ? null : storableDiagnostic(messageType.slice(0, 200)),
          knownTypes: knownTypes.length,
        },
      },
    );
    this.messageType = messageType;
    this.knownTypes = knownTypes;
  }
}
