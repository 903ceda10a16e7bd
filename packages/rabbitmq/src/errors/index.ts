export { RabbitConnectionError } from './rabbit-connection-error';
export { RabbitTopologyError } from './topology-error';
export { UnroutableMessageError } from './unroutable-message-error';
export { PublishRejectedError } from './publish-rejected-error';
export { InvalidDestinationError } from './invalid-destination-error';
