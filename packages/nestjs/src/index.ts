/**
 * @justonce/nestjs — justonce in a NestJS application: `JustonceModule` provides the store,
 * the outbox and operations; `@OnMessage` methods of providers consume Kafka, RabbitMQ or SQS
 * through an inbox, started and drained with the application; `@Idempotent` routes answer
 * repeats of an `Idempotency-Key` with the stored response, on Express and Fastify.
 *
 * @packageDocumentation
 */
export { JustonceModule } from './module';
export type {
  FeatureOperation,
  JustonceFeatureOptions,
  JustonceModuleAsyncOptions,
} from './module';
export type {
  ConsumerSettings,
  IdempotencyDefaults,
  IdempotentRequest,
  InboxSettings,
  JustonceModuleOptions,
  JustonceRootOptions,
  KafkaSettings,
  MemorySettings,
  OperationsSettings,
  RabbitSettings,
  RelaySettings,
  ShutdownSettings,
  SqsSettings,
  TransportName,
  TransportSettings,
} from './options/types';
export {
  getOperationsToken,
  InjectOperations,
  InjectOutbox,
  InjectStore,
  JUSTONCE_MODULE_OPTIONS,
  JUSTONCE_OPERATIONS,
  JUSTONCE_OUTBOX,
  JUSTONCE_STORE,
} from './tokens';
export { OnMessage } from './messages/on-message';
export type { MessageContext, MessageMethod, OnMessageOptions } from './messages/on-message';
export type { ModuleConsumer } from './messages/consumers';
export { JustonceRuntime } from './runtime';
export { Idempotent, IdempotencyKey, IdempotencyTransaction } from './http/idempotent';
export { IdempotencyInterceptor } from './http/interceptor';
export type { IdempotentOptions } from './http/routes';
