import {
  checkConnect,
  checkKafka,
  checkMysql,
  checkPostgres,
  checkRabbitmq,
  checkSqs,
  type CheckResult,
} from './checks';
import {
  ELASTICMQ_LOCAL_ENDPOINT,
  ELASTICMQ_LOG,
  ELASTICMQ_PORT,
  ensureNativeElasticmq,
  elasticmqVersion,
} from './elasticmq';
import {
  KAFKA_LOCAL_BROKER,
  KAFKA_LOG,
  KAFKA_PORT,
  ensureNativeKafka,
  kafkaVersion,
} from './kafka';
import {
  CONNECT_LOCAL_URL,
  CONNECT_LOG,
  CONNECT_PORT,
  connectVersion,
  debeziumVersion,
  ensureNativeConnect,
} from './connect';
import { withLock } from './lock';
import { POSTGRES_LOCAL_URL, POSTGRES_LOG, ensureLocalPostgres } from './postgres';
import { MYSQL_LOCAL_URL, MYSQL_LOG, ensureLocalMysql } from './mysql';
import {
  POSTGRES_LOGICAL_LOCAL_URL,
  POSTGRES_LOGICAL_LOG,
  checkLogicalPostgres,
  ensureLogicalPostgres,
} from './postgres-logical';
import { RABBITMQ_LOCAL_URL, RABBITMQ_LOG, ensureLocalRabbitmq } from './rabbitmq';
import { shown } from './paths';
import type { ServiceName } from './types';

/** Everything the resolver knows about one service. */
export interface ServiceDefinition {
  /** Human name for messages. */
  label: string;
  /** The environment variable that carries its address. */
  envVar: string;
  /** The address of the local (native) service. */
  localAddress: string;
  /** The log file of the local service, or of our start commands for it. */
  logFile: string;
  /** Protocol-level readiness check of an address in its environment-variable form. */
  check(address: string): Promise<CheckResult>;
  /** Reuses or starts the local service (the "native launcher" step). */
  ensureLocal(timeoutMs: number): Promise<'running' | 'started'>;
  /** What to do when nothing worked, one way per line. */
  howTo(): string[];
}

/** Splits a `KAFKA_BROKERS` value into broker addresses. */
export function splitBrokers(value: string): string[] {
  return value
    .split(',')
    .map((broker) => broker.trim())
    .filter(Boolean);
}

const compose = (service: string) =>
  `with Docker: \`docker compose -f docker/compose.yml up -d ${service}\` ` +
  '(or start a Docker engine: the tests then use Testcontainers)';

/** The services. */
export const SERVICES: Record<ServiceName, ServiceDefinition> = {
  postgres: {
    label: 'PostgreSQL',
    envVar: 'DATABASE_URL',
    localAddress: POSTGRES_LOCAL_URL,
    logFile: POSTGRES_LOG,
    check: checkPostgres,
    ensureLocal: (timeoutMs) => withLock('postgres', () => ensureLocalPostgres(timeoutMs)),
    howTo: () => [
      'point the tests at a server: DATABASE_URL=postgres://user@host:5432/db pnpm test',
      'start the local server, e.g. `pg_ctlcluster <version> main start` (Debian/Ubuntu), ' +
        '`pg_ctl -D "$PGDATA" start` or `brew services start postgresql`, ' +
        `allowing ${POSTGRES_LOCAL_URL} (user postgres, trust auth on 127.0.0.1)`,
      compose('postgres'),
    ],
  },
  kafka: {
    label: 'Kafka',
    envVar: 'KAFKA_BROKERS',
    localAddress: KAFKA_LOCAL_BROKER,
    logFile: KAFKA_LOG,
    check: (address) => checkKafka(splitBrokers(address)),
    ensureLocal: ensureNativeKafka,
    howTo: () => [
      'point the tests at a broker: KAFKA_BROKERS=host:9092 pnpm test',
      `install Java 17+ and Maven 3.8+, then \`pnpm services:up\` (Kafka ${kafkaVersion()} ` +
        `from Maven Central on 127.0.0.1:${KAFKA_PORT}; log in ${shown(KAFKA_LOG)})`,
      compose('kafka'),
    ],
  },
  sqs: {
    label: 'SQS (ElasticMQ)',
    envVar: 'SQS_ENDPOINT',
    localAddress: ELASTICMQ_LOCAL_ENDPOINT,
    logFile: ELASTICMQ_LOG,
    check: (address) => checkSqs(address),
    ensureLocal: ensureNativeElasticmq,
    howTo: () => [
      'point the tests at an SQS endpoint: SQS_ENDPOINT=http://host:9324 pnpm test',
      `install Java 17+ and Maven 3.8+, then \`pnpm services:up\` (ElasticMQ ` +
        `${elasticmqVersion()} from Maven Central on 127.0.0.1:${ELASTICMQ_PORT}; ` +
        `log in ${shown(ELASTICMQ_LOG)})`,
      compose('elasticmq'),
    ],
  },
  rabbitmq: {
    label: 'RabbitMQ',
    envVar: 'AMQP_URL',
    localAddress: RABBITMQ_LOCAL_URL,
    logFile: RABBITMQ_LOG,
    check: checkRabbitmq,
    ensureLocal: (timeoutMs) => withLock('rabbitmq', () => ensureLocalRabbitmq(timeoutMs)),
    howTo: () => [
      'point the tests at a broker: AMQP_URL=amqp://user:pass@host:5672 pnpm test',
      'start the local server: `rabbitmq-server -detached` (or `brew services start rabbitmq`), ' +
        `allowing ${RABBITMQ_LOCAL_URL}`,
      compose('rabbitmq'),
    ],
  },
  mysql: {
    label: 'MySQL/MariaDB',
    envVar: 'MYSQL_URL',
    localAddress: MYSQL_LOCAL_URL,
    logFile: MYSQL_LOG,
    check: checkMysql,
    ensureLocal: (timeoutMs) => withLock('mysql', () => ensureLocalMysql(timeoutMs)),
    howTo: () => [
      'point the tests at a server: MYSQL_URL=mysql://user:pass@host:3306/test pnpm test',
      'start the local server, e.g. `start-stop-daemon --start --background --exec /usr/sbin/mariadbd` ' +
        `(Debian's MariaDB) or \`brew services start mariadb\`, allowing ${MYSQL_LOCAL_URL}`,
      compose('mariadb'),
    ],
  },
  'postgres-logical': {
    label: 'PostgreSQL (logical replication)',
    envVar: 'LOGICAL_DATABASE_URL',
    localAddress: POSTGRES_LOGICAL_LOCAL_URL,
    logFile: POSTGRES_LOGICAL_LOG,
    check: checkLogicalPostgres,
    ensureLocal: (timeoutMs) =>
      withLock('postgres-logical', () => ensureLogicalPostgres(timeoutMs)),
    howTo: () => [
      'point the tests at a server with wal_level = logical: ' +
        'LOGICAL_DATABASE_URL=postgres://user@host:5432/db pnpm test',
      "as root, with PostgreSQL's binaries under /usr/lib/postgresql/<version>/bin and a " +
        '`postgres` user: `pnpm services:up` creates and starts one on ' +
        `${POSTGRES_LOGICAL_LOCAL_URL}`,
      compose('postgres-logical'),
    ],
  },
  connect: {
    label: 'Kafka Connect (Debezium)',
    envVar: 'KAFKA_CONNECT_URL',
    localAddress: CONNECT_LOCAL_URL,
    logFile: CONNECT_LOG,
    check: checkConnect,
    ensureLocal: ensureNativeConnect,
    howTo: () => [
      'point the tests at a worker whose cluster uses KAFKA_BROKERS and has the Debezium ' +
        'PostgreSQL plugin: KAFKA_CONNECT_URL=http://host:8083 pnpm test',
      `install Java 17+ and Maven 3.8+, then \`pnpm services:up\` (Kafka Connect ` +
        `${connectVersion()} with Debezium ${debeziumVersion()} from Maven Central on ` +
        `127.0.0.1:${CONNECT_PORT}; log in ${shown(CONNECT_LOG)})`,
    ],
  },
};
