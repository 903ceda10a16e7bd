export { InvalidPayloadError } from './invalid-payload-error';
export { UnknownMessageTypeError } from './unknown-message-type-error';
