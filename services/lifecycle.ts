import { connectVersion, debeziumVersion } from './connect';
import { elasticmqVersion } from './elasticmq';
import { recordedVersion } from './java';
import { kafkaVersion } from './kafka';
import { readStartedNote } from './local-server';
import { withLock } from './lock';
import { shown } from './paths';
import { stopLocalPostgres } from './postgres';
import { clearPid, ownProcesses, stopProcess } from './processes';
import { stopLocalRabbitmq } from './rabbitmq';
import { stopLocalMysql } from './mysql';
import { stopLogicalPostgres } from './postgres-logical';
import { SERVICES } from './registry';
import { SERVICE_NAMES, type ServiceName } from './types';

/** What `services:status` reports for one service. */
export interface ServiceStatus {
  /** Which service. */
  name: ServiceName;
  /** Where it is expected: the environment variable's value, else the local address. */
  address: string;
  /** Whether the address came from the environment. */
  fromEnv: boolean;
  /** Whether it answered a protocol-level check just now. */
  answering: boolean;
  /** Why not, when it did not. */
  reason?: string;
  /** Who runs it, as far as we can tell. */
  owner: string;
  /** Where its log is, for services this checkout launches or started. */
  logFile?: string;
}

const JAVA_SERVICE: Partial<Record<ServiceName, string>> = {
  kafka: 'kafka',
  sqs: 'elasticmq',
  connect: 'connect',
};

/** The version the pom pins and the label of a Java service, for `services:status`. */
function javaLabel(name: ServiceName): { pinned: string; label: string } {
  if (name === 'kafka') return { pinned: kafkaVersion(), label: 'Kafka' };
  if (name === 'connect') {
    return {
      pinned: `${connectVersion()} (Debezium ${debeziumVersion()})`,
      label: 'Kafka Connect',
    };
  }
  return { pinned: elasticmqVersion(), label: 'ElasticMQ' };
}

/** Checks each service and says who runs it. */
export async function serviceStatus(
  names: readonly ServiceName[] = SERVICE_NAMES,
): Promise<ServiceStatus[]> {
  const own = await ownProcesses();
  return Promise.all(
    names.map(async (name): Promise<ServiceStatus> => {
      const definition = SERVICES[name];
      const fromEnv = process.env[definition.envVar];
      const address = fromEnv || definition.localAddress;
      const result = await definition.check(address);
      const javaName = JAVA_SERVICE[name];
      const pids = own.filter((found) => found.service === javaName).map((found) => found.pid);
      let owner: string;
      let ours = false;
      if (fromEnv) owner = `configured by ${definition.envVar}`;
      else if (javaName && pids.length > 0) {
        const { pinned, label } = javaLabel(name);
        const running = (await recordedVersion(javaName)) ?? 'of unknown version';
        const stale = running === pinned ? '' : ` (the pom pins ${pinned}: restart to switch)`;
        owner = `native ${label} ${running}${stale}, started by justonce (pid ${pids.join(', ')})`;
        ours = true;
      } else if (javaName) {
        owner = result.ok ? 'not ours (another checkout or Docker)' : 'not running';
      } else if (await readStartedNote(name)) {
        owner = 'local server, started by justonce';
        ours = true;
      } else owner = 'local server, not started by justonce';
      return {
        name,
        address,
        fromEnv: Boolean(fromEnv),
        answering: result.ok,
        ...(result.ok ? {} : { reason: result.reason }),
        owner,
        ...(ours ? { logFile: shown(definition.logFile) } : {}),
      };
    }),
  );
}

/**
 * Stops what this checkout started: every Java process carrying its marker (Kafka Connect
 * workers first, while their Kafka still answers their last offset commit; then Kafka and
 * ElasticMQ), and PostgreSQL or RabbitMQ only if a launcher of ours started them. Servers that
 * were running before us are left alone. Returns one line per action.
 */
export async function stopServices(): Promise<string[]> {
  const done: string[] = [];
  // Under both start-up locks, so that a run starting a service right now finishes first and
  // nothing starts while we sweep. Every process with our marker goes, in parallel.
  await withLock('connect', () =>
    withLock('kafka', () =>
      withLock('elasticmq', async () => {
        const found = await ownProcesses();
        const workers = found.filter((own) => isConnectWorker(own.service));
        const others = found.filter((own) => !isConnectWorker(own.service));
        for (const group of [workers, others]) {
          await Promise.all(group.map((own) => stopProcess(own.pid)));
          for (const own of group) done.push(`stopped ${own.service} (pid ${own.pid})`);
        }
        await Promise.all([clearPid('connect'), clearPid('kafka'), clearPid('elasticmq')]);
      }),
    ),
  );
  if (await withLock('postgres', stopLocalPostgres)) done.push('stopped the local PostgreSQL');
  if (await withLock('rabbitmq', stopLocalRabbitmq)) done.push('stopped the local RabbitMQ');
  if (await withLock('mysql', stopLocalMysql)) done.push('stopped the local MySQL/MariaDB');
  if (await withLock('postgres-logical', stopLogicalPostgres)) {
    done.push('stopped the logical-replication PostgreSQL');
  }
  return done;
}

/** The shared Connect worker and private ones (`private/connect-…`). */
function isConnectWorker(service: string): boolean {
  return service === 'connect' || service.startsWith('private/connect-');
}
