/**
 * Private broker instances for tests that kill, wipe or stop a broker: each runs on free ports
 * with its own data, so the other test files keep using the shared services meanwhile. Every
 * handle's `dispose` stops its processes and removes its files; call it in `afterAll`.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { connectUrl, launchConnect, privateConnectNode, type ConnectNode } from './connect';
import { elasticmqEndpoint, launchElasticmq, privateElasticmqNode } from './elasticmq';
import { kafkaAddress, launchKafka, privateKafkaNode, type KafkaNode } from './kafka';
import { SERVICES_DIR } from './paths';
import { clearPid, isAlive, readPid } from './processes';
import { startRabbitmqNode, type RabbitmqNode } from './rabbitmq';
import { pollUntil } from './wait';

/** A TCP port that was free on 127.0.0.1 a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function uniqueName(label: string): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** Kills the recorded process of a service with SIGKILL and waits until it is gone. */
async function killRecorded(service: string): Promise<void> {
  const pid = await readPid(service);
  if (pid === undefined) return;
  process.kill(pid, 'SIGKILL');
  await pollUntil(async () => !isAlive(pid), { timeoutMs: 10_000, intervalMs: 50 });
  await clearPid(service);
}

/** A private Kafka broker (see {@link startPrivateKafka}). */
export interface PrivateKafka {
  /** Its bootstrap address, for `brokers`. */
  readonly broker: string;
  /** Where it lives. */
  readonly node: KafkaNode;
  /** SIGKILL: no controlled shutdown, no flush beyond what the OS already has. */
  kill(): Promise<void>;
  /** Starts it again; `keepData: false` formats an empty data directory first. */
  start(options: { keepData: boolean }): Promise<void>;
  /** Stops it and removes its directory. Idempotent. */
  dispose(): Promise<void>;
}

/** Starts a private single-node Kafka (KRaft) on free ports, from the shared jars. */
export async function startPrivateKafka(timeoutMs = 60_000): Promise<PrivateKafka> {
  const node = privateKafkaNode(uniqueName('kafka'), await freePort(), await freePort());
  const handle: PrivateKafka = {
    broker: kafkaAddress(node),
    node,
    kill: () => killRecorded(node.service),
    start: ({ keepData }) => launchKafka(node, { timeoutMs, keepData }),
    dispose: async () => {
      await killRecorded(node.service);
      await fs.rm(node.home, { recursive: true, force: true });
    },
  };
  try {
    await handle.start({ keepData: false });
  } catch (error) {
    await handle.dispose();
    throw error;
  }
  return handle;
}

/** A private ElasticMQ server (see {@link startPrivateElasticmq}). */
export interface PrivateElasticmq {
  /** Its SQS endpoint. */
  readonly endpoint: string;
  /** SIGKILL. Its queues and messages, in memory only, are gone with it. */
  kill(): Promise<void>;
  /** Starts it again, with only the predefined queues. */
  start(): Promise<void>;
  /** Stops it and removes its directory. Idempotent. */
  dispose(): Promise<void>;
}

/** Starts a private ElasticMQ on a free port, from the shared jars. */
export async function startPrivateElasticmq(timeoutMs = 60_000): Promise<PrivateElasticmq> {
  const node = privateElasticmqNode(uniqueName('elasticmq'), await freePort());
  const handle: PrivateElasticmq = {
    endpoint: elasticmqEndpoint(node),
    kill: () => killRecorded(node.service),
    start: () => launchElasticmq(node, timeoutMs),
    dispose: async () => {
      await killRecorded(node.service);
      await fs.rm(node.home, { recursive: true, force: true });
    },
  };
  try {
    await handle.start();
  } catch (error) {
    await handle.dispose();
    throw error;
  }
  return handle;
}

/**
 * Starts a private RabbitMQ node (its own node name, AMQP and distribution ports, data and
 * log directories, no plugins) with the machine's RabbitMQ installation.
 */
export async function startPrivateRabbitmq(timeoutMs = 60_000): Promise<RabbitmqNode> {
  const name = uniqueName('rabbitmq');
  return startRabbitmqNode({
    nodeName: `jo-${name}@localhost`,
    home: path.join(SERVICES_DIR, 'private', name),
    port: await freePort(),
    distPort: await freePort(),
    timeoutMs,
  });
}

/** A private Kafka Connect worker (see {@link startPrivateConnect}). */
export interface PrivateConnect {
  /** Its REST URL. */
  readonly url: string;
  /** Where it lives; `node.groupId` also prefixes its three internal topics. */
  readonly node: ConnectNode;
  /**
   * SIGKILL: no task shutdown and no last offset commit, so a restarted worker resumes from
   * the offsets it committed before and may send records again.
   */
  kill(): Promise<void>;
  /** Starts it again on its topics: its connectors and their committed offsets resume. */
  start(): Promise<void>;
  /** Stops it, deletes its config, offset and status topics and removes its directory. */
  dispose(): Promise<void>;
}

/** Deletes a private worker's internal topics; best effort (the broker may be gone). */
async function deleteWorkerTopics(brokers: string, node: ConnectNode): Promise<void> {
  const admin = new Kafka({
    brokers: brokers.split(','),
    clientId: 'justonce-services',
    logLevel: logLevel.NOTHING,
    retry: { retries: 1 },
  }).admin();
  try {
    await admin.connect();
    await admin.deleteTopics({
      topics: ['configs', 'offsets', 'status'].map((name) => `${node.groupId}-${name}`),
      timeout: 10_000,
    });
  } catch {
    // Left behind, under names nothing else uses: harmless.
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Starts a private distributed Kafka Connect worker, in a Connect cluster of its own (its own
 * group id and config, offset and status topics) on a free REST port, from the shared jars
 * and the Debezium plugin, with its topics in `brokers` (`host:port[,host:port]`).
 */
export async function startPrivateConnect(
  brokers: string,
  timeoutMs = 120_000,
): Promise<PrivateConnect> {
  const node = privateConnectNode(uniqueName('connect'), await freePort());
  const handle: PrivateConnect = {
    url: connectUrl(node),
    node,
    kill: () => killRecorded(node.service),
    start: () => launchConnect(node, { brokers, timeoutMs }),
    dispose: async () => {
      await killRecorded(node.service);
      await deleteWorkerTopics(brokers, node);
      await fs.rm(node.home, { recursive: true, force: true });
    },
  };
  try {
    await handle.start();
  } catch (error) {
    await handle.dispose();
    throw error;
  }
  return handle;
}
