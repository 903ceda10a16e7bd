import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { checkKafka, warmUpKafka } from './checks';
import { freshLog, javaExecutable, launchJava, recordVersion, stopRecorded } from './java';
import { pomProperty, resolveJars } from './maven';
import { LOGS_DIR, SERVICES_DIR, shown } from './paths';
import { withLock } from './lock';
import { readPid, runLogged } from './processes';
import { pollUntil, portAnswers } from './wait';

/** Port of the native broker's client listener (bound to 127.0.0.1 only). */
export const KAFKA_PORT = 39092;
/** Port of the native broker's KRaft controller listener (bound to 127.0.0.1 only). */
export const KAFKA_CONTROLLER_PORT = 39093;
/** The bootstrap address of the native broker. */
export const KAFKA_LOCAL_BROKER = `127.0.0.1:${KAFKA_PORT}`;
/**
 * The fixed KRaft cluster id of the native broker: base64url of the 16 bytes
 * `justonce-tests-1`. Fixed so that formatting is reproducible.
 */
export const KAFKA_CLUSTER_ID = 'anVzdG9uY2UtdGVzdHMtMQ';

/** The Apache Kafka version, as pinned in `services/maven/kafka/pom.xml`. */
export function kafkaVersion(): string {
  return pomProperty('kafka', 'kafka.version');
}

/** The native broker's log file. */
export const KAFKA_LOG = path.join(LOGS_DIR, 'kafka.log');

/**
 * Where one native Kafka broker lives and listens. The shared broker of the tests is
 * {@link SHARED_KAFKA}; tests that kill or wipe a broker start a private one with
 * {@link privateKafkaNode}, so that the other test files keep theirs.
 */
export interface KafkaNode {
  /** Service name: the process marker and the pid file `.services/<service>/pid`. */
  readonly service: string;
  /** Directory of its `server.properties` and `data/`. */
  readonly home: string;
  /** Client listener port (127.0.0.1). */
  readonly port: number;
  /** KRaft controller listener port (127.0.0.1). */
  readonly controllerPort: number;
  /** Log file receiving the broker's output. */
  readonly logFile: string;
}

/** The shared native broker the tests, benchmarks and `services:up` use. */
export const SHARED_KAFKA: KafkaNode = {
  service: 'kafka',
  home: path.join(SERVICES_DIR, 'kafka'),
  port: KAFKA_PORT,
  controllerPort: KAFKA_CONTROLLER_PORT,
  logFile: KAFKA_LOG,
};

/**
 * A private broker's node: home, pid file and log under `.services/private/<name>/`, so
 * `services:down` finds it by its marker if a test leaves it behind.
 */
export function privateKafkaNode(name: string, port: number, controllerPort: number): KafkaNode {
  const home = path.join(SERVICES_DIR, 'private', name);
  return {
    service: `private/${name}`,
    home,
    port,
    controllerPort,
    logFile: path.join(home, 'kafka.log'),
  };
}

/** The bootstrap address of a node. */
export function kafkaAddress(node: KafkaNode): string {
  return `127.0.0.1:${node.port}`;
}

const libDir = path.join(SERVICES_DIR, 'kafka', 'lib');
const dataDirOf = (node: KafkaNode) => path.join(node.home, 'data');
const configFileOf = (node: KafkaNode) => path.join(node.home, 'server.properties');

/**
 * Broker settings for one combined broker + controller on a small (2-core) test machine:
 * replication factors of 1, no initial rebalance delay, few threads and partitions.
 */
function serverProperties(node: KafkaNode): string {
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@127.0.0.1:${node.controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${node.port},CONTROLLER://127.0.0.1:${node.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${kafkaAddress(node)}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': dataDirOf(node),
    'num.partitions': 3,
    'default.replication.factor': 1,
    'min.insync.replicas': 1,
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 5,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 5,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    'group.initial.rebalance.delay.ms': 0,
    'auto.create.topics.enable': 'true',
    'delete.topic.enable': 'true',
    'num.network.threads': 2,
    'num.io.threads': 2,
    'num.recovery.threads.per.data.dir': 1,
    'log.retention.hours': 24,
  };
  const lines = Object.entries(settings).map(([key, value]) => `${key}=${value}`);
  return `# Written by services/kafka.ts on every start; edit that file instead.\n${lines.join('\n')}\n`;
}

/** Empties a node's data directory and formats it with {@link KAFKA_CLUSTER_ID}. */
async function formatKafkaData(node: KafkaNode): Promise<void> {
  await fs.rm(dataDirOf(node), { recursive: true, force: true });
  await fs.mkdir(dataDirOf(node), { recursive: true });
  try {
    await runLogged(
      javaExecutable(),
      [
        '-Xmx256m',
        '-cp',
        path.join(libDir, '*'),
        'kafka.tools.StorageTool',
        'format',
        '-t',
        KAFKA_CLUSTER_ID,
        '-c',
        configFileOf(node),
      ],
      node.logFile,
      { cwd: node.home, timeoutMs: 60_000 },
    );
  } catch (error) {
    throw new Error(
      `Could not format the Kafka data directory (${(error as Error).message}); see ${shown(node.logFile)}`,
    );
  }
}

/** Options of {@link launchKafka}. */
export interface LaunchKafkaOptions {
  /** Upper bound for the broker to answer. */
  readonly timeoutMs: number;
  /**
   * `true`: start on the data directory as it is (topics, records, committed offsets and
   * producer state survive), formatting it only if it was never formatted. `false`: empty
   * and format it first. Default `false`.
   */
  readonly keepData?: boolean;
}

/**
 * Starts one native Kafka broker (KRaft mode) and waits until it serves metadata and consumer
 * groups. Resolves the jars first (cached). Any process still recorded for the node is
 * stopped first. The caller makes sure nothing else answers on the node's ports.
 */
export async function launchKafka(node: KafkaNode, options: LaunchKafkaOptions): Promise<void> {
  javaExecutable();
  await resolveJars('kafka', libDir);
  await stopRecorded(node.service);
  await fs.mkdir(node.home, { recursive: true });
  await fs.writeFile(configFileOf(node), serverProperties(node));
  await freshLog(node.logFile);
  const formatted = existsSync(path.join(dataDirOf(node), 'meta.properties'));
  if (!options.keepData || !formatted) await formatKafkaData(node);
  const address = kafkaAddress(node);
  await launchJava({
    service: node.service,
    label: `Kafka ${kafkaVersion()}`,
    address,
    jvmOptions: [
      '-Xms128m',
      '-Xmx512m',
      '-XX:+UseSerialGC',
      '-Djava.awt.headless=true',
      '-Dorg.slf4j.simpleLogger.showDateTime=true',
      '-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS',
    ],
    libDir,
    main: ['kafka.Kafka', configFileOf(node)],
    cwd: node.home,
    logFile: node.logFile,
    check: () => checkKafka([address]),
    timeoutMs: options.timeoutMs,
  });
  await recordVersion(node.service, kafkaVersion());
  await warmUpKafka([address]);
}

/**
 * Starts the shared native broker from an empty data directory (see {@link launchKafka}).
 * The caller holds the `kafka` lock and has checked that nothing answers yet.
 */
export function startNativeKafka(timeoutMs: number): Promise<void> {
  return launchKafka(SHARED_KAFKA, { timeoutMs });
}

/**
 * Restarts the shared native broker keeping its data: stops the process this checkout
 * started (SIGTERM, controlled shutdown), then starts it again on the same data directory.
 * Topics, records, committed offsets survive. Under the `kafka` lock.
 */
export function restartNativeKafka(timeoutMs: number): Promise<void> {
  return withLock('kafka', async () => {
    if ((await readPid('kafka')) === undefined && (await portAnswers('127.0.0.1', KAFKA_PORT))) {
      throw new Error(`the broker on port ${KAFKA_PORT} was not started by this checkout`);
    }
    await launchKafka(SHARED_KAFKA, { timeoutMs, keepData: true });
  });
}

/**
 * Makes sure the native broker answers at {@link KAFKA_LOCAL_BROKER}: reuses a running one
 * (ours or anyone's), else starts it under the `kafka` lock. Resolves whether it was `running`
 * or `started`.
 */
export async function ensureNativeKafka(timeoutMs: number): Promise<'running' | 'started'> {
  if ((await checkKafka([KAFKA_LOCAL_BROKER])).ok) return 'running';
  return withLock('kafka', async () => {
    if ((await checkKafka([KAFKA_LOCAL_BROKER])).ok) return 'running';
    if (await portAnswers('127.0.0.1', KAFKA_PORT)) {
      // Perhaps our broker is still starting (its launcher died): give it the timeout.
      if ((await readPid('kafka')) !== undefined) {
        const check = () => checkKafka([KAFKA_LOCAL_BROKER]).then((result) => result.ok);
        if (await pollUntil(check, { timeoutMs })) return 'running';
      }
      throw new Error(
        `port ${KAFKA_PORT} is in use by something that does not answer as a Kafka broker`,
      );
    }
    await startNativeKafka(timeoutMs);
    return 'started';
  });
}
