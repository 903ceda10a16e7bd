import { SQSClient, ListQueuesCommand } from '@aws-sdk/client-sqs';
import { connect as amqpConnect } from 'amqplib';
import { Kafka, logLevel } from 'kafkajs';
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';

/** The outcome of one readiness check: `ok`, or why not. */
export type CheckResult = { ok: true } | { ok: false; reason: string; code?: string };

function failed(error: unknown): CheckResult {
  const code = (error as { code?: unknown } | undefined)?.code;
  return {
    ok: false,
    reason: error instanceof Error ? error.message : String(error),
    ...(typeof code === 'string' ? { code } : {}),
  };
}

/** Connects to PostgreSQL and runs `select 1`. */
export async function checkPostgres(url: string): Promise<CheckResult> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return { ok: true };
  } catch (error) {
    return failed(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Connects to MySQL or MariaDB and runs `select 1`. The database the URL names is created when
 * it is missing (each test then makes databases of its own beside it).
 */
export async function checkMysql(url: string): Promise<CheckResult> {
  const target = new URL(url);
  const database = decodeURIComponent(target.pathname.slice(1));
  target.pathname = '/';
  try {
    const connection = await createConnection({ uri: target.toString(), connectTimeout: 2000 });
    try {
      if (database !== '') {
        await connection.query(`create database if not exists \`${database.replace(/`/g, '``')}\``);
      }
      await connection.query('select 1');
      return { ok: true };
    } finally {
      await connection.end().catch(() => undefined);
    }
  } catch (error) {
    return failed(error);
  }
}

/** Connects to the Kafka bootstrap brokers and asks for the cluster's metadata. */
export async function checkKafka(brokers: string[]): Promise<CheckResult> {
  const admin = new Kafka({
    brokers,
    clientId: 'justonce-services',
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1500,
    requestTimeout: 3000,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 ? { ok: true } : { ok: false, reason: 'no brokers' };
  } catch (error) {
    return failed(error);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Waits until the broker's group coordinator serves requests, which on a fresh broker means
 * creating the `__consumer_offsets` topic. Doing it once at start spares the first consumer
 * group of every test run the "coordinator is loading" retries.
 */
export async function warmUpKafka(brokers: string[]): Promise<void> {
  const admin = new Kafka({
    brokers,
    clientId: 'justonce-services',
    logLevel: logLevel.NOTHING,
    retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 },
  }).admin();
  try {
    await admin.connect();
    await admin.describeGroups(['justonce-services-warm-up']);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Client settings for an SQS-compatible endpoint such as ElasticMQ (any credentials pass). */
export function sqsClientSettings(endpoint: string) {
  return {
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: {
      accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'justonce',
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'justonce',
    },
  };
}

/**
 * Lists the queues of an SQS endpoint; with `expectQueue`, passes only once that queue exists
 * (ElasticMQ creates its predefined queues while starting).
 */
export async function checkSqs(endpoint: string, expectQueue?: string): Promise<CheckResult> {
  const client = new SQSClient({ ...sqsClientSettings(endpoint), maxAttempts: 1 });
  try {
    const listed = await client.send(new ListQueuesCommand({ QueueNamePrefix: expectQueue }), {
      abortSignal: AbortSignal.timeout(3000),
    });
    if (expectQueue && !listed.QueueUrls?.some((url) => url.endsWith(`/${expectQueue}`))) {
      return { ok: false, reason: `queue ${expectQueue} does not exist yet` };
    }
    return { ok: true };
  } catch (error) {
    return failed(error);
  } finally {
    client.destroy();
  }
}

/** Opens and closes an AMQP connection. */
export async function checkRabbitmq(url: string): Promise<CheckResult> {
  try {
    const connection = await amqpConnect(url, { timeout: 3000 });
    connection.on('error', () => undefined);
    await connection.close();
    return { ok: true };
  } catch (error) {
    return failed(error);
  }
}

/** The Debezium classes a Connect worker of ours must list among its plugins. */
export const DEBEZIUM_PLUGIN_CLASSES = [
  'io.debezium.connector.postgresql.PostgresConnector',
  'io.debezium.transforms.outbox.EventRouter',
] as const;

/**
 * Asks a Kafka Connect worker's REST API for its connectors (`GET /connectors`, which answers
 * only once the worker has joined its group and read its config topic) and its plugins
 * (`GET /connector-plugins?connectorsOnly=false`), which must include Debezium's PostgreSQL
 * connector and outbox event router.
 */
export async function checkConnect(url: string): Promise<CheckResult> {
  const base = url.replace(/\/+$/, '');
  try {
    const connectors = await fetch(`${base}/connectors`, { signal: AbortSignal.timeout(3000) });
    if (!connectors.ok) {
      return { ok: false, reason: `GET /connectors answered ${connectors.status}` };
    }
    const plugins = await fetch(`${base}/connector-plugins?connectorsOnly=false`, {
      signal: AbortSignal.timeout(3000),
    });
    if (!plugins.ok) {
      return { ok: false, reason: `GET /connector-plugins answered ${plugins.status}` };
    }
    const listed = new Set(
      ((await plugins.json()) as Array<{ class?: unknown }>).map((plugin) => plugin.class),
    );
    const missing = DEBEZIUM_PLUGIN_CLASSES.filter((name) => !listed.has(name));
    return missing.length === 0
      ? { ok: true }
      : { ok: false, reason: `the worker lists no plugin ${missing.join(', ')}` };
  } catch (error) {
    return failed(error);
  }
}
