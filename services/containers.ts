import { existsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { StartedTestContainer } from 'testcontainers';
import { elasticmqConfig, elasticmqVersion } from './elasticmq';
import { kafkaVersion } from './kafka';
import type { ServiceName } from './types';

/**
 * The image of the MySQL-compatible service when `JUSTONCE_MYSQL_IMAGE` chooses one (e.g.
 * `mysql:8.4`, to run the store contract suite on MySQL 8 instead of MariaDB). A chosen image
 * is started even when a local server answers (see docs/services.md).
 */
export function mysqlImage(): string | undefined {
  return process.env.JUSTONCE_MYSQL_IMAGE || undefined;
}

/** The services Testcontainers can start: Kafka Connect always runs natively. */
export type ContainerServiceName = Exclude<ServiceName, 'connect'>;

/** The images the container path runs (the same as `docker/compose.yml`). */
export function containerImages(): Record<ContainerServiceName, string> {
  return {
    postgres: 'postgres:17-alpine',
    kafka: `apache/kafka:${kafkaVersion()}`,
    sqs: `softwaremill/elasticmq-native:${elasticmqVersion()}`,
    rabbitmq: 'rabbitmq:4.1-alpine',
    mysql: mysqlImage() ?? 'mariadb:11.4',
    'postgres-logical': 'postgres:17-alpine',
  };
}

/** Where a Docker engine could listen: `DOCKER_HOST`, else the usual socket paths. */
function dockerEndpoints(): Array<{ socketPath: string } | { host: string; port: number }> {
  const fromEnv = process.env.DOCKER_HOST;
  if (fromEnv) {
    if (fromEnv.startsWith('unix://')) return [{ socketPath: fromEnv.slice('unix://'.length) }];
    const url = new URL(fromEnv.replace(/^tcp:/, 'http:'));
    return [{ host: url.hostname, port: Number(url.port || 2375) }];
  }
  const candidates = [
    '/var/run/docker.sock',
    path.join(os.homedir(), '.docker', 'run', 'docker.sock'),
    path.join(os.homedir(), '.docker', 'desktop', 'docker.sock'),
    process.env.XDG_RUNTIME_DIR && path.join(process.env.XDG_RUNTIME_DIR, 'docker.sock'),
  ];
  return candidates
    .filter((socket): socket is string => Boolean(socket) && existsSync(socket as string))
    .map((socketPath) => ({ socketPath }));
}

/**
 * True when a Docker engine answers `GET /_ping` within `timeoutMs`. Bounded and quiet, so the
 * common case of "no engine" costs at most a moment before the native launchers take over.
 * `JUSTONCE_NO_DOCKER=1` skips the check.
 */
export async function dockerAnswers(timeoutMs = 1500): Promise<boolean> {
  if (process.env.JUSTONCE_NO_DOCKER === '1') return false;
  for (const endpoint of dockerEndpoints()) {
    const ok = await new Promise<boolean>((resolve) => {
      const request = http.get({ ...endpoint, path: '/_ping', timeout: timeoutMs }, (response) => {
        response.resume();
        resolve(response.statusCode === 200);
      });
      request.on('timeout', () => request.destroy());
      request.on('error', () => resolve(false));
    });
    if (ok) return true;
  }
  return false;
}

/** A free TCP port on this machine (for a fixed host port that the container can advertise). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A container started for one service, and its address. */
export interface ServiceContainer {
  /** The address, in the string form of the service's environment variable. */
  address: string;
  /** The running container; stop it when done. */
  container: StartedTestContainer;
}

/**
 * Starts one service in a container with Testcontainers, with the settings the images
 * document. Kafka and ElasticMQ write their own address into metadata and queue URLs, so they
 * get a host port equal to the container port, known before start.
 */
export async function startContainer(name: ContainerServiceName): Promise<ServiceContainer> {
  const { GenericContainer, Wait, getContainerRuntimeClient } = await import('testcontainers');
  const images = containerImages();
  const host = (await getContainerRuntimeClient()).info.containerRuntime.host;
  switch (name) {
    case 'postgres': {
      const container = await new GenericContainer(images.postgres)
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust', POSTGRES_DB: 'test' })
        .withExposedPorts(5432)
        .withTmpFs({ '/var/lib/postgresql/data': 'rw' })
        .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start();
      const port = container.getMappedPort(5432);
      return { address: `postgres://postgres@${host}:${port}/test`, container };
    }
    case 'postgres-logical': {
      const container = await new GenericContainer(images['postgres-logical'])
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust', POSTGRES_DB: 'test' })
        .withCommand(['postgres', '-c', 'wal_level=logical', '-c', 'max_replication_slots=32'])
        .withExposedPorts(5432)
        .withTmpFs({ '/var/lib/postgresql/data': 'rw' })
        .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start();
      const port = container.getMappedPort(5432);
      return { address: `postgres://postgres@${host}:${port}/test`, container };
    }
    case 'kafka': {
      const port = await freePort();
      const container = await new GenericContainer(images.kafka)
        .withEnvironment({
          KAFKA_NODE_ID: '1',
          KAFKA_PROCESS_ROLES: 'broker,controller',
          KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${port},CONTROLLER://localhost:9093`,
          KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${host}:${port}`,
          KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
          KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
          KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
          KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
          KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: '1',
          KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
          KAFKA_NUM_PARTITIONS: '3',
          KAFKA_HEAP_OPTS: '-Xms128m -Xmx512m',
        })
        .withExposedPorts({ container: port, host: port })
        .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
        .start();
      return { address: `${host}:${port}`, container };
    }
    case 'sqs': {
      const port = await freePort();
      const container = await new GenericContainer(images.sqs)
        .withCopyContentToContainer([
          {
            content: elasticmqConfig({ bindHost: '0.0.0.0', publicHost: host, port }),
            target: '/opt/elasticmq.conf',
          },
        ])
        .withExposedPorts({ container: port, host: port })
        .withWaitStrategy(Wait.forListeningPorts())
        .start();
      return { address: `http://${host}:${port}`, container };
    }
    case 'rabbitmq': {
      const container = await new GenericContainer(images.rabbitmq)
        .withExposedPorts(5672)
        .withWaitStrategy(Wait.forLogMessage(/Server startup complete/))
        .start();
      const port = container.getMappedPort(5672);
      return { address: `amqp://guest:guest@${host}:${port}`, container };
    }
    case 'mysql': {
      // MySQL's image takes its own variables, and logs readiness once for its
      // initialisation server (port 0) before the real one.
      const mysql = images.mysql.startsWith('mysql');
      const container = await new GenericContainer(images.mysql)
        .withEnvironment(
          mysql
            ? { MYSQL_ALLOW_EMPTY_PASSWORD: 'yes', MYSQL_DATABASE: 'test' }
            : { MARIADB_ALLOW_EMPTY_ROOT_PASSWORD: '1', MARIADB_DATABASE: 'test' },
        )
        .withExposedPorts(3306)
        .withTmpFs({ '/var/lib/mysql': 'rw' })
        .withWaitStrategy(
          mysql
            ? Wait.forLogMessage(/ready for connections.*port: 3306/)
            : Wait.forLogMessage(/ready for connections/, 2),
        )
        .start();
      const port = container.getMappedPort(3306);
      return { address: `mysql://root@${host}:${port}/test`, container };
    }
  }
}
