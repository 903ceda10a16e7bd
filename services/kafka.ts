import { promises as fs } from 'node:fs';
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

const home = path.join(SERVICES_DIR, 'kafka');
const libDir = path.join(home, 'lib');
const dataDir = path.join(home, 'data');
const configFile = path.join(home, 'server.properties');
/** The native broker's log file. */
export const KAFKA_LOG = path.join(LOGS_DIR, 'kafka.log');

/**
 * Broker settings for one combined broker + controller on a small (2-core) test machine:
 * replication factors of 1, no initial rebalance delay, few threads and partitions.
 */
function serverProperties(): string {
  const settings: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@127.0.0.1:${KAFKA_CONTROLLER_PORT}`,
    listeners: `PLAINTEXT://127.0.0.1:${KAFKA_PORT},CONTROLLER://127.0.0.1:${KAFKA_CONTROLLER_PORT}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${KAFKA_PORT}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': dataDir,
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
  return `# Written by services/kafka.ts on every fresh start; edit that file instead.\n${lines.join('\n')}\n`;
}

/**
 * Starts the native single-node Kafka broker (KRaft mode) and waits until it serves
 * metadata and consumer groups. Resolves the jars first (cached), starts from an empty data
 * directory formatted with {@link KAFKA_CLUSTER_ID}. The caller holds the `kafka` lock and has
 * checked that nothing answers yet.
 */
export async function startNativeKafka(timeoutMs: number): Promise<void> {
  const java = javaExecutable();
  await resolveJars('kafka', libDir);
  await stopRecorded('kafka');
  await fs.rm(dataDir, { recursive: true, force: true });
  await fs.mkdir(dataDir, { recursive: true });
  await fs.writeFile(configFile, serverProperties());
  await freshLog(KAFKA_LOG);
  const classPath = path.join(libDir, '*');
  try {
    await runLogged(
      java,
      [
        '-Xmx256m',
        '-cp',
        classPath,
        'kafka.tools.StorageTool',
        'format',
        '-t',
        KAFKA_CLUSTER_ID,
        '-c',
        configFile,
      ],
      KAFKA_LOG,
      { cwd: home, timeoutMs: 60_000 },
    );
  } catch (error) {
    throw new Error(
      `Could not format the Kafka data directory (${(error as Error).message}); see ${shown(KAFKA_LOG)}`,
    );
  }
  await launchJava({
    service: 'kafka',
    label: `Kafka ${kafkaVersion()}`,
    address: KAFKA_LOCAL_BROKER,
    jvmOptions: [
      '-Xms128m',
      '-Xmx512m',
      '-XX:+UseSerialGC',
      '-Djava.awt.headless=true',
      '-Dorg.slf4j.simpleLogger.showDateTime=true',
      '-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS',
    ],
    libDir,
    main: ['kafka.Kafka', configFile],
    cwd: home,
    logFile: KAFKA_LOG,
    check: () => checkKafka([KAFKA_LOCAL_BROKER]),
    timeoutMs,
  });
  await recordVersion('kafka', kafkaVersion());
  await warmUpKafka([KAFKA_LOCAL_BROKER]);
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
