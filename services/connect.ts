import { promises as fs } from 'node:fs';
import path from 'node:path';
import { checkConnect } from './checks';
import { freshLog, javaExecutable, launchJava, recordVersion, stopRecorded } from './java';
import { KAFKA_LOCAL_BROKER, ensureNativeKafka } from './kafka';
import { withLock } from './lock';
import { pomProperty, resolveJars } from './maven';
import { LOGS_DIR, SERVICES_DIR } from './paths';
import { readPid } from './processes';
import { pollUntil, portAnswers } from './wait';

/** REST port of the shared native Kafka Connect worker (bound to 127.0.0.1 only). */
export const CONNECT_PORT = 38083;
/** The REST URL of the shared native Kafka Connect worker. */
export const CONNECT_LOCAL_URL = `http://127.0.0.1:${CONNECT_PORT}`;

/** The Kafka Connect version, as pinned in `services/maven/connect/pom.xml`. */
export function connectVersion(): string {
  return pomProperty('connect', 'connect.version');
}

/** The Debezium version, as pinned in `services/maven/debezium/pom.xml`. */
export function debeziumVersion(): string {
  return pomProperty('debezium', 'debezium.version');
}

/** The shared native worker's log file. */
export const CONNECT_LOG = path.join(LOGS_DIR, 'connect.log');

/**
 * Where one distributed Kafka Connect worker lives, listens and keeps its state. Its group id
 * and its three internal topics are its own, so a private worker never joins the shared one's
 * cluster.
 */
export interface ConnectNode {
  /** Service name: the process marker and the pid file `.services/<service>/pid`. */
  readonly service: string;
  /** Directory of its `worker.properties`. */
  readonly home: string;
  /** REST port (127.0.0.1). */
  readonly port: number;
  /** Connect cluster `group.id`; also the prefix of its config, offset and status topics. */
  readonly groupId: string;
  /** Log file receiving the worker's output. */
  readonly logFile: string;
}

/** The shared native worker the tests, benchmarks and `services:up` use. */
export const SHARED_CONNECT: ConnectNode = {
  service: 'connect',
  home: path.join(SERVICES_DIR, 'connect'),
  port: CONNECT_PORT,
  groupId: 'justonce-connect',
  logFile: CONNECT_LOG,
};

/** A private worker's node, kept under `.services/private/<name>/` (see `privateKafkaNode`). */
export function privateConnectNode(name: string, port: number): ConnectNode {
  const home = path.join(SERVICES_DIR, 'private', name);
  return {
    service: `private/${name}`,
    home,
    port,
    groupId: `justonce-${name}`,
    logFile: path.join(home, 'connect.log'),
  };
}

/** The REST URL of a node. */
export function connectUrl(node: ConnectNode): string {
  return `http://127.0.0.1:${node.port}`;
}

const libDir = path.join(SERVICES_DIR, 'connect', 'lib');
/** The worker's `plugin.path`: one folder per plugin below it. */
const pluginsDir = path.join(SERVICES_DIR, 'connect', 'plugins');
const configFileOf = (node: ConnectNode) => path.join(node.home, 'worker.properties');

/**
 * Worker settings for a distributed worker on a small test machine: replication factor 1 and
 * few partitions for its internal topics; offsets flushed every second, so a killed worker
 * resends little; no delay before the tasks of a worker that left are handed out again (a
 * restarted worker of a one-worker cluster picks its connector up at once). Records pass as
 * they are: string keys, byte-array values; connectors override these per connector.
 */
function workerProperties(node: ConnectNode, brokers: string): string {
  const settings: Record<string, string | number> = {
    'bootstrap.servers': brokers,
    'group.id': node.groupId,
    'config.storage.topic': `${node.groupId}-configs`,
    'offset.storage.topic': `${node.groupId}-offsets`,
    'status.storage.topic': `${node.groupId}-status`,
    'config.storage.replication.factor': 1,
    'offset.storage.replication.factor': 1,
    'status.storage.replication.factor': 1,
    'offset.storage.partitions': 3,
    'status.storage.partitions': 1,
    'offset.flush.interval.ms': 1000,
    'scheduled.rebalance.max.delay.ms': 0,
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'org.apache.kafka.connect.converters.ByteArrayConverter',
    listeners: `http://127.0.0.1:${node.port}`,
    'rest.advertised.host.name': '127.0.0.1',
    'rest.advertised.port': node.port,
    'plugin.path': pluginsDir,
    'plugin.discovery': 'service_load',
  };
  const lines = Object.entries(settings).map(([key, value]) => `${key}=${value}`);
  return `# Written by services/connect.ts on every start; edit that file instead.\n${lines.join('\n')}\n`;
}

/** Options of {@link launchConnect}. */
export interface LaunchConnectOptions {
  /** The Kafka cluster the worker keeps its topics in, as `host:port[,host:port]`. */
  readonly brokers: string;
  /** Upper bound for the worker to answer. */
  readonly timeoutMs: number;
}

/**
 * Starts one distributed Kafka Connect worker and waits until its REST API lists its
 * connectors and Debezium's plugins. Resolves the worker's jars and the Debezium plugin first
 * (cached). Any process still recorded for the node is stopped first. The worker's state
 * (connectors, their offsets and status) lives in its Kafka topics, so a restart resumes it.
 */
export async function launchConnect(
  node: ConnectNode,
  options: LaunchConnectOptions,
): Promise<void> {
  javaExecutable();
  await Promise.all([
    resolveJars('connect', libDir),
    resolveJars('debezium', path.join(pluginsDir, 'debezium-postgres')),
  ]);
  await stopRecorded(node.service);
  await fs.mkdir(node.home, { recursive: true });
  await fs.writeFile(configFileOf(node), workerProperties(node, options.brokers));
  await freshLog(node.logFile);
  const url = connectUrl(node);
  await launchJava({
    service: node.service,
    label: `Kafka Connect ${connectVersion()}`,
    address: url,
    jvmOptions: [
      '-Xms128m',
      '-Xmx512m',
      '-XX:+UseSerialGC',
      '-Djava.awt.headless=true',
      '-Dorg.slf4j.simpleLogger.showDateTime=true',
      '-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS',
    ],
    libDir,
    main: ['org.apache.kafka.connect.cli.ConnectDistributed', configFileOf(node)],
    cwd: node.home,
    logFile: node.logFile,
    check: () => checkConnect(url),
    timeoutMs: options.timeoutMs,
  });
  await recordVersion(node.service, `${connectVersion()} (Debezium ${debeziumVersion()})`);
}

/**
 * The Kafka cluster the shared worker uses: `KAFKA_BROKERS` when set, else the native broker,
 * which is found or started first.
 */
async function sharedBrokers(timeoutMs: number): Promise<string> {
  const fromEnv = process.env.KAFKA_BROKERS;
  if (fromEnv) return fromEnv;
  await ensureNativeKafka(timeoutMs);
  return KAFKA_LOCAL_BROKER;
}

/**
 * Makes sure the shared worker answers at {@link CONNECT_LOCAL_URL}: reuses a running one,
 * else starts it under the `connect` lock. Resolves whether it was `running` or `started`.
 */
export async function ensureNativeConnect(timeoutMs: number): Promise<'running' | 'started'> {
  if ((await checkConnect(CONNECT_LOCAL_URL)).ok) return 'running';
  const brokers = await sharedBrokers(timeoutMs);
  return withLock('connect', async () => {
    if ((await checkConnect(CONNECT_LOCAL_URL)).ok) return 'running';
    if (await portAnswers('127.0.0.1', CONNECT_PORT)) {
      // Perhaps our worker is still starting (its launcher died): give it the timeout.
      if ((await readPid('connect')) !== undefined) {
        const check = () => checkConnect(CONNECT_LOCAL_URL).then((result) => result.ok);
        if (await pollUntil(check, { timeoutMs })) return 'running';
      }
      throw new Error(
        `port ${CONNECT_PORT} is in use by something that does not answer as a Kafka Connect ` +
          'worker with the Debezium PostgreSQL plugin',
      );
    }
    await launchConnect(SHARED_CONNECT, { brokers, timeoutMs });
    return 'started';
  });
}
