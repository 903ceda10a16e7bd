export { defineMessage, MESSAGE_TYPE_HEADER } from './message-type';
export type {
  DefineMessageOptions,
  MessageType,
  MessagePayload,
  MessageData,
} from './message-type';
export type { PayloadIssue } from './issues';
export { InvalidPayloadError, UnknownMessageTypeError } from './errors';
