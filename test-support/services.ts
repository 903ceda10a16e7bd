/**
 * Services for tests and benchmarks. Import from here (not from `services/` directly):
 *
 * - `databaseUrl(): string`      PostgreSQL connection string (`DATABASE_URL`)
 * - `kafkaBrokers(): string[]`   Kafka bootstrap brokers for kafkajs (`KAFKA_BROKERS`)
 * - `sqsEndpoint(): string`      SQS endpoint, ElasticMQ by default (`SQS_ENDPOINT`)
 * - `sqsClientConfig()`          `{ endpoint, region, credentials }` for `new SQSClient(...)`
 * - `amqpUrl(): string`          RabbitMQ URL for amqplib (`AMQP_URL`)
 * - `logicalDatabaseUrl()`       PostgreSQL with `wal_level = logical` (`LOGICAL_DATABASE_URL`)
 * - `kafkaConnectUrl(): string`  REST URL of a Kafka Connect worker with Debezium (`KAFKA_CONNECT_URL`)
 *
 * The getters read the variables the Jest global setup exported, and throw a clear error when
 * a test runs without it. Scripts and benchmarks outside Jest call `ensureServices` first:
 *
 * ```ts
 * const { databaseUrl, kafkaBrokers, sqsEndpoint, amqpUrl } =
 *   await ensureServices(['postgres', 'kafka', 'sqs', 'rabbitmq']);
 * ```
 *
 * `PREDEFINED_QUEUES` names the queues ElasticMQ defines at start (a standard and a FIFO queue,
 * each with a dead-letter queue after `PREDEFINED_MAX_RECEIVE_COUNT` receives); tests that need
 * isolation create their own queues and topics with unique names.
 */
export {
  PREDEFINED_MAX_RECEIVE_COUNT,
  PREDEFINED_QUEUES,
  SERVICE_NAMES,
  ServiceUnavailableError,
  amqpUrl,
  databaseUrl,
  ensureServices,
  kafkaBrokers,
  kafkaConnectUrl,
  logicalDatabaseUrl,
  mysqlUrl,
  resolveServices,
  sqsClientConfig,
  sqsEndpoint,
  stopContainers,
  type AddressesOf,
  type EnsureOptions,
  type ServiceAddresses,
  type ServiceName,
} from '../services';
