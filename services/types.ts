/** The services the tests, benchmarks and examples of justonce need. */
export const SERVICE_NAMES = [
  'postgres',
  'kafka',
  'sqs',
  'rabbitmq',
  'mysql',
  'postgres-logical',
  'connect',
] as const;

/** One of {@link SERVICE_NAMES}. `sqs` is served by ElasticMQ when nothing else is configured. */
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Where the services answer, in the shapes their clients take. */
export interface ServiceAddresses {
  /** A PostgreSQL connection string (`DATABASE_URL`). */
  databaseUrl: string;
  /** Kafka bootstrap brokers as `host:port` entries (`KAFKA_BROKERS`, comma-separated). */
  kafkaBrokers: string[];
  /** The HTTP endpoint of an SQS-compatible server (`SQS_ENDPOINT`). */
  sqsEndpoint: string;
  /** An AMQP 0-9-1 URL of a RabbitMQ broker (`AMQP_URL`). */
  amqpUrl: string;
  /** A MySQL or MariaDB connection string (`MYSQL_URL`). */
  mysqlUrl: string;
  /** A PostgreSQL connection string of a server with `wal_level = logical` (`LOGICAL_DATABASE_URL`). */
  logicalDatabaseUrl: string;
  /**
   * The REST URL of a Kafka Connect worker with Debezium's PostgreSQL plugin
   * (`KAFKA_CONNECT_URL`), whose cluster keeps its topics in `kafkaBrokers`.
   */
  kafkaConnectUrl: string;
}

/** Which field of {@link ServiceAddresses} each service fills. */
export interface AddressKeyOf {
  postgres: 'databaseUrl';
  kafka: 'kafkaBrokers';
  sqs: 'sqsEndpoint';
  rabbitmq: 'amqpUrl';
  mysql: 'mysqlUrl';
  'postgres-logical': 'logicalDatabaseUrl';
  connect: 'kafkaConnectUrl';
}

/** The addresses of the services `N`, and only those. */
export type AddressesOf<N extends ServiceName> = {
  [K in N as AddressKeyOf[K]]: ServiceAddresses[AddressKeyOf[K]];
};

/**
 * How a service was found:
 * - `env`: its environment variable named it;
 * - `running`: something already answered at the default local address (reused);
 * - `container`: Testcontainers started it for this process;
 * - `started`: a native launcher (or the local server's own start command) started it now.
 */
export type ServiceSource = 'env' | 'running' | 'container' | 'started';

/** One resolved service. */
export interface ResolvedService {
  /** Which service. */
  name: ServiceName;
  /** How it was found. */
  source: ServiceSource;
  /** Its address, in the string form of its environment variable. */
  address: string;
  /** Something to read when it misbehaves (a log file or a container name), when known. */
  detail?: string;
}

/** Progress lines for a human; the default writes nothing. */
export type ServiceLogger = (line: string) => void;
