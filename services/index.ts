/**
 * Services for tests, benchmarks and examples: one mechanism that finds or starts PostgreSQL,
 * Kafka, SQS (ElasticMQ) and RabbitMQ. See docs/services.md.
 *
 * - {@link ensureServices} / {@link resolveServices}: find or start services (environment
 *   variable → already running locally → Testcontainers → native launcher → clear error).
 * - {@link databaseUrl}, {@link kafkaBrokers}, {@link sqsEndpoint}, {@link sqsClientConfig},
 *   {@link amqpUrl}: read the addresses the Jest global setup exported.
 * - {@link serviceStatus}, {@link stopServices}, {@link stopContainers}: status and shutdown.
 */
export { ensureServices, exportToEnv, resolveServices, stopContainers } from './resolve';
export { ServiceUnavailableError, type EnsureOptions } from './resolve';
export {
  amqpUrl,
  databaseUrl,
  kafkaBrokers,
  kafkaConnectUrl,
  logicalDatabaseUrl,
  mysqlUrl,
  sqsClientConfig,
  sqsEndpoint,
} from './env';
export { CONNECT_LOCAL_URL, CONNECT_PORT, connectVersion, debeziumVersion } from './connect';
export { serviceStatus, stopServices, type ServiceStatus } from './lifecycle';
export { SERVICES } from './registry';
export {
  KAFKA_CLUSTER_ID,
  KAFKA_LOCAL_BROKER,
  KAFKA_PORT,
  kafkaVersion,
  restartNativeKafka,
} from './kafka';
export {
  ELASTICMQ_LOCAL_ENDPOINT,
  ELASTICMQ_PORT,
  PREDEFINED_MAX_RECEIVE_COUNT,
  PREDEFINED_QUEUES,
  elasticmqVersion,
} from './elasticmq';
export { POSTGRES_LOCAL_URL } from './postgres';
export { RABBITMQ_LOCAL_URL } from './rabbitmq';
export {
  SERVICE_NAMES,
  type AddressesOf,
  type ResolvedService,
  type ServiceAddresses,
  type ServiceName,
  type ServiceSource,
} from './types';
