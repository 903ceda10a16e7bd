import { sqsClientSettings } from './checks';
import { splitBrokers } from './registry';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set. Run the tests through \`pnpm test\` (its global setup finds or starts ` +
        'the services and sets it), or call ensureServices() from test-support/services first.',
    );
  }
  return value;
}

/** The PostgreSQL connection string the global setup resolved (`DATABASE_URL`). */
export function databaseUrl(): string {
  return required('DATABASE_URL');
}

/** The Kafka bootstrap brokers the global setup resolved (`KAFKA_BROKERS`), for kafkajs. */
export function kafkaBrokers(): string[] {
  return splitBrokers(required('KAFKA_BROKERS'));
}

/** The SQS endpoint the global setup resolved (`SQS_ENDPOINT`), usually ElasticMQ. */
export function sqsEndpoint(): string {
  return required('SQS_ENDPOINT');
}

/**
 * Settings for `new SQSClient(...)` against {@link sqsEndpoint}: the endpoint, a region
 * (`AWS_REGION`, default us-east-1) and credentials (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`,
 * default dummies, which ElasticMQ accepts).
 */
export function sqsClientConfig(): ReturnType<typeof sqsClientSettings> {
  return sqsClientSettings(sqsEndpoint());
}

/** The RabbitMQ URL the global setup resolved (`AMQP_URL`). */
export function amqpUrl(): string {
  return required('AMQP_URL');
}

/**
 * The REST URL of the Kafka Connect worker the global setup resolved (`KAFKA_CONNECT_URL`):
 * distributed mode, its topics in {@link kafkaBrokers}, Debezium's PostgreSQL plugin loaded.
 */
export function kafkaConnectUrl(): string {
  return required('KAFKA_CONNECT_URL');
}

/** The MySQL or MariaDB URL the global setup resolved (`MYSQL_URL`). */
export function mysqlUrl(): string {
  return required('MYSQL_URL');
}

/** The URL of the PostgreSQL with `wal_level = logical` the global setup resolved (`LOGICAL_DATABASE_URL`). */
export function logicalDatabaseUrl(): string {
  return required('LOGICAL_DATABASE_URL');
}
