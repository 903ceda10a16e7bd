/**
 * The sides of `pnpm bench relays` (see relays.ts): each relays its own schema's outbox to its
 * own topic, and can be stopped while the benchmark fills the outbox and started to drain it.
 */
import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import {
  createRelay,
  createStore,
  debeziumOutboxConnector,
  debeziumOutboxSchema,
  type Relay,
  type Store,
} from '@justonce/core';
import { createKafkaPublisher, type KafkaPublisher } from '@justonce/kafka';

/** The relays the benchmark compares. */
export type SideName = 'polling' | 'log' | 'debezium';

/** One relay under measurement. */
export interface RelaySide {
  readonly name: SideName;
  /** The store its events are added through (its own schema). */
  readonly store: Store;
  readonly schema: string;
  /** The topic its events go to (their `destination`). */
  readonly topic: string;
  /** Begins relaying; resolves once it is running. */
  start(): Promise<void>;
  /** Stops relaying (what was not yet relayed stays for the next start). */
  stop(): Promise<void>;
  /** Stops it and removes its schema, slot, connector and topic. */
  dispose(): Promise<void>;
  /**
   * Rejects when the side can no longer relay (a Connect task that failed), so that a wait
   * for its events ends with the reason instead of a timeout.
   */
  check(): Promise<void>;
}

/** What every side is built from. */
export interface SideEnv {
  readonly databaseUrl: string;
  /** Kafka Connect's REST address (`KAFKA_CONNECT_URL`). */
  readonly connectUrl: string;
  readonly kafka: Kafka;
  readonly kafkaBrokers: readonly string[];
}

const PARTITIONS = 8;

async function ownSchemaAndTopic(
  name: SideName,
  env: SideEnv,
): Promise<{ store: Store; schema: string; topic: string }> {
  const suffix = randomBytes(4).toString('hex');
  const schema = `bench_relays_${name}_${suffix}`;
  const topic = `bench-relays-${name}-${suffix}`;
  const store = await createStore({ connectionString: env.databaseUrl, schema, pool: { max: 12 } });
  await store.migrate();
  const admin = env.kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic, numPartitions: PARTITIONS }],
    waitForLeaders: true,
  });
  await admin.disconnect();
  return { store, schema, topic };
}

async function dropSchemaAndTopic(
  env: SideEnv,
  own: { store: Store; schema: string; topic: string },
): Promise<void> {
  await own.store.knex.raw(`drop schema if exists "${own.schema}" cascade`);
  await own.store.close();
  const admin = env.kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [own.topic] }).catch(() => undefined);
  await admin.disconnect();
}

/** A relay that starts and stops with the side, publishing through one Kafka publisher. */
async function relayedSide(
  name: SideName,
  env: SideEnv,
  relayOf: (store: Store, publisher: KafkaPublisher) => Relay,
  cleanUp: (store: Store) => Promise<void> = async () => undefined,
): Promise<RelaySide> {
  const own = await ownSchemaAndTopic(name, env);
  const publisher = createKafkaPublisher({ brokers: env.kafkaBrokers, clientId: `bench-${name}` });
  let relay: Relay | undefined;
  const stop = async (): Promise<void> => {
    await relay?.stop();
    relay = undefined;
  };
  return {
    name,
    ...own,
    check: async () => undefined,
    start: async () => {
      relay = relayOf(own.store, publisher);
      await relay.start();
    },
    stop,
    dispose: async () => {
      await stop();
      await publisher.close();
      await cleanUp(own.store);
      await dropSchemaAndTopic(env, own);
    },
  };
}

/** The polling relay: claim, publish, delete; woken by notifications. */
function pollingSide(env: SideEnv): Promise<RelaySide> {
  return relayedSide('polling', env, (store, publisher) =>
    createRelay({ store, publisher, batchSize: 500 }),
  );
}

/**
 * The log relay: a `pgoutput` slot of the side's own, created at its first start and kept
 * while it is stopped, so what is added meanwhile waits in the slot.
 */
async function logSide(env: SideEnv): Promise<RelaySide> {
  const slot = `bench_relays_${randomBytes(4).toString('hex')}`;
  const side = await relayedSide(
    'log',
    env,
    (store, publisher) =>
      createRelay({ store, publisher, mode: 'log', log: { slot, publication: slot } }),
    async (store) => {
      await store.knex.raw('select pg_drop_replication_slot(?)', [slot]).catch(() => undefined);
      await store.knex.raw(`drop publication if exists "${slot}"`);
    },
  );
  // The first start creates the publication and the slot, from which later starts read.
  await side.start();
  await side.stop();
  return side;
}

/** Calls Kafka Connect's REST API; resolves to the parsed answer (undefined when empty). */
async function connect(
  env: SideEnv,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const response = await fetch(`${env.connectUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

/** Waits until the connector and its task report `state`. */
async function connectorState(env: SideEnv, name: string, state: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const status = (await connect(env, 'GET', `/connectors/${name}/status`).catch(
      () => undefined,
    )) as
      | { connector?: { state?: string }; tasks?: Array<{ state?: string; trace?: string }> }
      | undefined;
    const tasks = status?.tasks ?? [];
    if (
      status?.connector?.state === state &&
      (state === 'STOPPED' ? tasks.length === 0 : tasks.length > 0) &&
      tasks.every((t) => t.state === state)
    ) {
      return;
    }
    const failed = tasks.find((t) => t.state === 'FAILED');
    if (failed) throw new Error(`connector ${name} failed: ${failed.trace ?? ''}`);
    if (Date.now() > deadline) throw new Error(`connector ${name}: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Debezium's PostgreSQL connector with the outbox event router, in the Connect worker: its
 * slot is created when the connector first runs, and pausing the connector keeps it, so
 * what is added meanwhile waits in the slot as for the log relay.
 */
async function debeziumSide(env: SideEnv): Promise<RelaySide> {
  const own = await ownSchemaAndTopic('debezium', env);
  const name = `bench-relays-${randomBytes(4).toString('hex')}`;
  const slot = name.replace(/-/g, '_');
  const table = { schema: own.schema, publication: slot };
  for (const statement of debeziumOutboxSchema(table)) await own.store.knex.raw(statement);
  const connector = debeziumOutboxConnector({
    ...table,
    databaseUrl: env.databaseUrl,
    name,
    slot,
    topicPrefix: name,
  });
  await connect(env, 'POST', '/connectors', connector);
  await connectorState(env, name, 'RUNNING');
  return {
    name: 'debezium',
    ...own,
    check: async () => {
      const status = (await connect(env, 'GET', `/connectors/${name}/status`)) as {
        tasks?: Array<{ state?: string; trace?: string }>;
      };
      const failed = status.tasks?.find((t) => t.state === 'FAILED');
      if (failed) throw new Error(`connector ${name} failed: ${failed.trace ?? ''}`);
    },
    start: async () => {
      await connect(env, 'PUT', `/connectors/${name}/resume`);
      await connectorState(env, name, 'RUNNING');
    },
    stop: async () => {
      // Stopped, not paused: a paused task's Debezium keeps reading the WAL into its queue.
      await connect(env, 'PUT', `/connectors/${name}/stop`);
      await connectorState(env, name, 'STOPPED');
    },
    dispose: async () => {
      await connect(env, 'DELETE', `/connectors/${name}`).catch(() => undefined);
      // The worker lets go of the slot a moment after the connector is deleted.
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const dropped = await own.store.knex
          .raw('select pg_drop_replication_slot(?)', [slot])
          .then(() => true)
          .catch((error: { code?: string }) => error.code === '42704');
        if (dropped) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      await own.store.knex.raw(`drop publication if exists "${slot}"`);
      await dropSchemaAndTopic(env, own);
    },
  };
}

/** Builds the named sides, in that order. */
export async function relaySides(names: readonly SideName[], env: SideEnv): Promise<RelaySide[]> {
  const builders: Record<SideName, (env: SideEnv) => Promise<RelaySide>> = {
    polling: pollingSide,
    log: logSide,
    debezium: debeziumSide,
  };
  const sides: RelaySide[] = [];
  for (const name of names) {
    if (!(name in builders)) throw new Error(`BENCH_RELAYS_SIDES: unknown side ${name}`);
    sides.push(await builders[name](env));
  }
  return sides;
}
