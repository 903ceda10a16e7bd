import { promises as fs } from 'node:fs';
import path from 'node:path';
import { checkSqs } from './checks';
import { freshLog, javaExecutable, launchJava, recordVersion, stopRecorded } from './java';
import { pomProperty, resolveJars } from './maven';
import { withLock } from './lock';
import { LOGS_DIR, SERVICES_DIR } from './paths';
import { readPid } from './processes';
import { pollUntil, portAnswers } from './wait';

/** Port of the native ElasticMQ server (bound to 127.0.0.1 only). */
export const ELASTICMQ_PORT = 39324;
/** The SQS endpoint of the native ElasticMQ server. */
export const ELASTICMQ_LOCAL_ENDPOINT = `http://127.0.0.1:${ELASTICMQ_PORT}`;

/** How many receives move a message of a predefined queue to its dead-letter queue. */
export const PREDEFINED_MAX_RECEIVE_COUNT = 3;

/**
 * The queues every ElasticMQ we start (native or container) defines at start-up. Tests that
 * need isolation create queues of their own with unique names; these exist for examples and
 * quick manual checks.
 */
export const PREDEFINED_QUEUES = {
  /** A standard queue whose messages move to `standardDlq` after 3 receives. */
  standard: 'justonce-standard',
  /** The dead-letter queue of `standard`. */
  standardDlq: 'justonce-standard-dlq',
  /** A FIFO queue (explicit deduplication ids) whose messages move to `fifoDlq` after 3 receives. */
  fifo: 'justonce-fifo.fifo',
  /** The dead-letter queue of `fifo`. */
  fifoDlq: 'justonce-fifo-dlq.fifo',
} as const;

/** The ElasticMQ version, as pinned in `services/maven/elasticmq/pom.xml`. */
export function elasticmqVersion(): string {
  return pomProperty('elasticmq', 'elasticmq.version');
}

/**
 * ElasticMQ's configuration (HOCON): where it binds, the host and port it writes into queue
 * URLs, and the predefined queues with their redrive policies.
 */
export function elasticmqConfig(options: { bindHost: string; publicHost: string; port: number }) {
  const q = PREDEFINED_QUEUES;
  const dlq = (name: string) =>
    `deadLettersQueue { name = "${name}", maxReceiveCount = ${PREDEFINED_MAX_RECEIVE_COUNT} }`;
  return `# Written by services/elasticmq.ts; edit that file instead.
include classpath("application.conf")

node-address {
  protocol = "http"
  host = "${options.publicHost}"
  port = ${options.port}
  context-path = ""
}
rest-sqs {
  enabled = true
  bind-port = ${options.port}
  bind-hostname = "${options.bindHost}"
  sqs-limits = strict
}
rest-stats.enabled = false
generate-node-address = false

queues {
  "${q.standard}" {
    defaultVisibilityTimeout = 30 seconds
    ${dlq(q.standardDlq)}
  }
  "${q.standardDlq}" {}
  "${q.fifo}" {
    fifo = true
    contentBasedDeduplication = false
    defaultVisibilityTimeout = 30 seconds
    ${dlq(q.fifoDlq)}
  }
  "${q.fifoDlq}" {
    fifo = true
  }
}

aws {
  region = "us-east-1"
  accountId = "000000000000"
}
`;
}

/** The native ElasticMQ server's log file. */
export const ELASTICMQ_LOG = path.join(LOGS_DIR, 'elasticmq.log');

/**
 * Where one native ElasticMQ server lives and listens: the shared one
 * ({@link SHARED_ELASTICMQ}) or a private one for a test that restarts it
 * ({@link privateElasticmqNode}).
 */
export interface ElasticmqNode {
  /** Service name: the process marker and the pid file `.services/<service>/pid`. */
  readonly service: string;
  /** Directory of its configuration. */
  readonly home: string;
  /** SQS port (127.0.0.1). */
  readonly port: number;
  /** Log file receiving the server's output. */
  readonly logFile: string;
}

/** The shared native server the tests, benchmarks and `services:up` use. */
export const SHARED_ELASTICMQ: ElasticmqNode = {
  service: 'elasticmq',
  home: path.join(SERVICES_DIR, 'elasticmq'),
  port: ELASTICMQ_PORT,
  logFile: ELASTICMQ_LOG,
};

/** A private server's node, kept under `.services/private/<name>/` (see `privateKafkaNode`). */
export function privateElasticmqNode(name: string, port: number): ElasticmqNode {
  const home = path.join(SERVICES_DIR, 'private', name);
  return { service: `private/${name}`, home, port, logFile: path.join(home, 'elasticmq.log') };
}

/** The SQS endpoint of a node. */
export function elasticmqEndpoint(node: ElasticmqNode): string {
  return `http://127.0.0.1:${node.port}`;
}

const libDir = path.join(SERVICES_DIR, 'elasticmq', 'lib');

/**
 * Starts one native ElasticMQ server and waits until it lists its predefined queues. Resolves
 * the jars first (cached); stops any process still recorded for the node. ElasticMQ keeps
 * queues and messages in memory: every start, restarts included, begins with only the
 * predefined queues, empty.
 */
export async function launchElasticmq(node: ElasticmqNode, timeoutMs: number): Promise<void> {
  javaExecutable();
  await resolveJars('elasticmq', libDir);
  await stopRecorded(node.service);
  await fs.mkdir(node.home, { recursive: true });
  const configFile = path.join(node.home, 'elasticmq.conf');
  await fs.writeFile(
    configFile,
    elasticmqConfig({ bindHost: '127.0.0.1', publicHost: '127.0.0.1', port: node.port }),
  );
  await freshLog(node.logFile);
  const endpoint = elasticmqEndpoint(node);
  await launchJava({
    service: node.service,
    label: `ElasticMQ ${elasticmqVersion()}`,
    address: endpoint,
    jvmOptions: ['-Xms64m', '-Xmx256m', '-XX:+UseSerialGC', `-Dconfig.file=${configFile}`],
    libDir,
    main: ['org.elasticmq.server.Main'],
    cwd: node.home,
    logFile: node.logFile,
    check: () => checkSqs(endpoint, PREDEFINED_QUEUES.fifoDlq),
    timeoutMs,
  });
  await recordVersion(node.service, elasticmqVersion());
}

/**
 * Starts the shared native ElasticMQ server. The caller holds the `elasticmq` lock and has
 * checked that nothing answers yet.
 */
export function startNativeElasticmq(timeoutMs: number): Promise<void> {
  return launchElasticmq(SHARED_ELASTICMQ, timeoutMs);
}

/**
 * Makes sure the native ElasticMQ answers at {@link ELASTICMQ_LOCAL_ENDPOINT}: reuses a running
 * one (ours or anyone's), else starts it under the `elasticmq` lock. Resolves whether it was
 * `running` or `started`.
 */
export async function ensureNativeElasticmq(timeoutMs: number): Promise<'running' | 'started'> {
  if ((await checkSqs(ELASTICMQ_LOCAL_ENDPOINT)).ok) return 'running';
  return withLock('elasticmq', async () => {
    if ((await checkSqs(ELASTICMQ_LOCAL_ENDPOINT)).ok) return 'running';
    if (await portAnswers('127.0.0.1', ELASTICMQ_PORT)) {
      // Perhaps our server is still starting (its launcher died): give it the timeout.
      if ((await readPid('elasticmq')) !== undefined) {
        const check = () => checkSqs(ELASTICMQ_LOCAL_ENDPOINT).then((result) => result.ok);
        if (await pollUntil(check, { timeoutMs })) return 'running';
      }
      throw new Error(
        `port ${ELASTICMQ_PORT} is in use by something that does not answer as an SQS server`,
      );
    }
    await startNativeElasticmq(timeoutMs);
    return 'started';
  });
}
