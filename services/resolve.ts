import type { StartedTestContainer } from 'testcontainers';
import { dockerAnswers, mysqlImage, startContainer } from './containers';
import { shown } from './paths';
import { SERVICES, splitBrokers } from './registry';
import {
  SERVICE_NAMES,
  type AddressesOf,
  type AddressKeyOf,
  type ResolvedService,
  type ServiceLogger,
  type ServiceName,
} from './types';
import { pollUntil, portAnswers } from './wait';

/** Options of {@link resolveServices} and {@link ensureServices}. */
export interface EnsureOptions {
  /**
   * Try Testcontainers when a Docker engine answers (default true). Containers live as long
   * as this process; stop them with {@link stopContainers}.
   */
  containers?: boolean;
  /** Upper bound for one service to become ready once started (default 120 s). */
  timeoutMs?: number;
  /** Receives one line per service resolved. */
  log?: ServiceLogger;
}

/** Raised when a service could not be found or started; its message says how to start it. */
export class ServiceUnavailableError extends Error {
  /** The service that is missing. */
  readonly service: ServiceName;

  constructor(service: ServiceName, reasons: string[]) {
    const definition = SERVICES[service];
    super(
      `${definition.label} is not available.\n` +
        reasons.map((reason) => `  - ${reason}`).join('\n') +
        `\nStart it in one of these ways:\n` +
        definition
          .howTo()
          .map((way) => `  * ${way}`)
          .join('\n'),
    );
    this.name = 'ServiceUnavailableError';
    this.service = service;
  }
}

const CONTAINERS = Symbol.for('justonce.services.containers');
type ContainerRegistry = { [CONTAINERS]?: StartedTestContainer[] };

/** Containers started by this process (shared through `globalThis` across module copies). */
function startedContainers(): StartedTestContainer[] {
  const registry = globalThis as ContainerRegistry;
  registry[CONTAINERS] ??= [];
  return registry[CONTAINERS];
}

/** Stops every container that {@link resolveServices} started in this process. */
export async function stopContainers(): Promise<void> {
  const containers = startedContainers().splice(0);
  await Promise.all(containers.map((container) => container.stop()));
}

async function waitChecked(name: ServiceName, address: string, timeoutMs: number) {
  let reason = '';
  const ok = await pollUntil(
    async () => {
      const result = await SERVICES[name].check(address);
      if (!result.ok) reason = result.reason;
      return result.ok;
    },
    { timeoutMs, intervalMs: 300 },
  );
  return ok ? undefined : reason;
}

function localHostPort(name: ServiceName): [string, number] {
  const address = SERVICES[name].localAddress;
  const url = new URL(address.includes('://') ? address : `tcp://${address}`);
  return [url.hostname, Number(url.port)];
}

async function resolveOne(
  name: ServiceName,
  options: Required<Omit<EnsureOptions, 'log'>>,
  docker: () => Promise<boolean>,
): Promise<ResolvedService> {
  const definition = SERVICES[name];
  const fromEnv = process.env[definition.envVar];

  // 1. Connection settings from the environment win, and must work.
  if (fromEnv) {
    const reason = await waitChecked(name, fromEnv, 10_000);
    if (reason === undefined) return { name, source: 'env', address: fromEnv };
    throw new ServiceUnavailableError(name, [
      `${definition.envVar}=${fromEnv} is set, but it does not answer: ${reason}`,
    ]);
  }

  const reasons: string[] = [];
  const local = async (): Promise<ResolvedService> => {
    const source = await definition.ensureLocal(options.timeoutMs);
    return {
      name,
      source,
      address: definition.localAddress,
      ...(source === 'started' ? { detail: `log ${shown(definition.logFile)}` } : {}),
    };
  };

  // 2. Something already serves the local address (a native service from an earlier run,
  //    the local server, or `docker compose`): reuse it rather than start another. An image
  //    chosen for MySQL asks for that server, not whatever answers locally.
  const chosenImage = name === 'mysql' && mysqlImage() !== undefined;
  if (!chosenImage && (await portAnswers(...localHostPort(name)))) {
    try {
      return await local();
    } catch (error) {
      throw new ServiceUnavailableError(name, [
        `something answers on ${definition.localAddress}, but: ${(error as Error).message}`,
      ]);
    }
  }

  // 3. Testcontainers, when a Docker engine answers (not for Kafka Connect, which needs the
  //    Debezium plugin: it always runs natively).
  if (options.containers && name !== 'connect') {
    if (await docker()) {
      try {
        const started = await startContainer(name);
        startedContainers().push(started.container);
        const reason = await waitChecked(name, started.address, options.timeoutMs);
        if (reason !== undefined) throw new Error(reason);
        return {
          name,
          source: 'container',
          address: started.address,
          detail: started.container.getName(),
        };
      } catch (error) {
        reasons.push(`Testcontainers could not start it: ${(error as Error).message}`);
      }
    } else {
      reasons.push('no Docker engine answers, so Testcontainers was skipped');
    }
  }

  // 4. Native launchers: the Java services from Maven Central, or the local servers; never
  //    in place of an image chosen for MySQL.
  if (chosenImage) {
    reasons.push(`JUSTONCE_MYSQL_IMAGE=${mysqlImage()} runs only in a container`);
    throw new ServiceUnavailableError(name, reasons);
  }
  try {
    return await local();
  } catch (error) {
    reasons.push(`the local launcher failed: ${(error as Error).message}`);
  }

  // 5. Nothing worked: say how to start it.
  throw new ServiceUnavailableError(name, reasons);
}

/**
 * Finds or starts each named service, in this order: its environment variable
 * (`DATABASE_URL`, `KAFKA_BROKERS`, `SQS_ENDPOINT`, `AMQP_URL`, `MYSQL_URL`,
 * `LOGICAL_DATABASE_URL`, `KAFKA_CONNECT_URL`); a service already answering
 * at the local address; Testcontainers when a Docker engine answers; the native launchers;
 * else a {@link ServiceUnavailableError} saying how to start it. Services resolve in parallel.
 */
export async function resolveServices(
  names: readonly ServiceName[] = SERVICE_NAMES,
  options: EnsureOptions = {},
): Promise<ResolvedService[]> {
  const settings = {
    containers: options.containers ?? true,
    timeoutMs: options.timeoutMs ?? 120_000,
  };
  let dockerCheck: Promise<boolean> | undefined;
  const docker = () => (dockerCheck ??= dockerAnswers());
  const outcomes = await Promise.allSettled(
    [...new Set(names)].map((name) => resolveOne(name, settings, docker)),
  );
  const failures = outcomes.flatMap((outcome) =>
    outcome.status === 'rejected' ? [outcome.reason as Error] : [],
  );
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) {
    const error = new Error(failures.map((failure) => failure.message).join('\n\n'));
    error.name = 'ServiceUnavailableError';
    throw error;
  }
  const resolved = outcomes.flatMap((outcome) =>
    outcome.status === 'fulfilled' ? [outcome.value] : [],
  );
  for (const service of resolved) {
    options.log?.(
      `${service.name.padEnd(8)} ${service.address} (${service.source}` +
        `${service.detail ? `; ${service.detail}` : ''})`,
    );
  }
  return resolved;
}

/** Writes resolved addresses into `process.env`, where child processes and getters read them. */
export function exportToEnv(services: readonly ResolvedService[]): void {
  for (const service of services) process.env[SERVICES[service.name].envVar] = service.address;
}

const ADDRESS_KEY: AddressKeyOf = {
  postgres: 'databaseUrl',
  kafka: 'kafkaBrokers',
  sqs: 'sqsEndpoint',
  rabbitmq: 'amqpUrl',
  mysql: 'mysqlUrl',
  'postgres-logical': 'logicalDatabaseUrl',
  connect: 'kafkaConnectUrl',
};

/**
 * Finds or starts the named services (see {@link resolveServices}), exports their addresses
 * to `process.env`, and returns them in the shapes their clients take:
 *
 * ```ts
 * const { databaseUrl, kafkaBrokers } = await ensureServices(['postgres', 'kafka']);
 * ```
 */
export async function ensureServices<N extends ServiceName>(
  names: readonly N[],
  options: EnsureOptions = {},
): Promise<AddressesOf<N>> {
  const resolved = await resolveServices(names, options);
  exportToEnv(resolved);
  const addresses: Record<string, string | string[]> = {};
  for (const service of resolved) {
    addresses[ADDRESS_KEY[service.name]] =
      service.name === 'kafka' ? splitBrokers(service.address) : service.address;
  }
  return addresses as AddressesOf<N>;
}
