/**
 * What a run sets up before the services start and removes after: each service's schema
 * (migrated, with its business tables), the Kafka topic, and the clients the orchestrator
 * itself uses to look at the tables and to re-publish messages.
 */
import amqplib, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { createStore, type Store } from '@justonce/core';
import type { ServiceConfig } from '../config';
import { createOrdersTables } from '../orders/app';
import { createPaymentsTables } from '../payments/handler';
import { createLedgerTables, sqlLedger, type Ledger } from '../provider/ledger';
import type { ServiceStores } from '../report/collect';
import { createShippingTables } from '../shipping/handler';

/** Partitions of the `order.created` topic: the payments consumer handles them in parallel. */
const PARTITIONS = 4;

/** The orchestrator's own handles on the run's infrastructure. */
export interface Infrastructure {
  readonly stores: ServiceStores;
  /** The provider's books, read-only here. */
  readonly ledger: Ledger;
  readonly admin: Admin;
  /** A plain Kafka producer, for re-publishing. */
  readonly producer: Producer;
  /** A RabbitMQ confirm channel, for re-publishing and looking at the queue. */
  readonly channel: ConfirmChannel;
  /** Closes the clients; unless `keep`, drops the schemas, the topics and the queues. */
  close(keep: boolean): Promise<void>;
}

async function reachable<T>(what: string, address: string, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    throw new Error(
      `${what} at ${address} does not answer (${String(error)}); ` +
        'start the local services with `pnpm services:up`, or point the environment at yours',
      { cause: error },
    );
  }
}

/** Opens a store on the provider's schema, to create its tables and drop the run's schemas. */
async function openProviderStore(config: ServiceConfig): Promise<Store> {
  const database = /^(mysql|mariadb):/.test(config.databaseUrl) ? 'MySQL' : 'PostgreSQL';
  return reachable(database, config.databaseUrl, async () => {
    const store = await createStore({
      connectionString: config.databaseUrl,
      schema: config.names.schemas.provider,
      pool: { max: 1 },
    });
    try {
      await store.knex.raw('select 1');
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  });
}

/** Drops the schema of `store` (on MySQL, its database) with everything in it. */
function dropSchema(on: Store, store: Store): Promise<unknown> {
  return on.knex.raw(
    store.dialect === 'mysql'
      ? `drop database if exists ${store.names.schema}`
      : `drop schema if exists ${store.names.schema} cascade`,
  );
}

async function openStore(config: ServiceConfig, schema: string): Promise<Store> {
  const store = await createStore({ connectionString: config.databaseUrl, schema });
  await store.migrate();
  return store;
}

/** Migrates each service's schema, creates the topic, connects the orchestrator's clients. */
export async function prepareInfrastructure(config: ServiceConfig): Promise<Infrastructure> {
  const { names } = config;
  const provider = await openProviderStore(config);
  await createLedgerTables(provider);
  const stores: ServiceStores = {
    orders: await openStore(config, names.schemas.orders),
    payments: await openStore(config, names.schemas.payments),
    shipping: await openStore(config, names.schemas.shipping),
  };
  await createOrdersTables(stores.orders);
  await createPaymentsTables(stores.payments);
  await createShippingTables(stores.shipping);

  const kafka = new Kafka({
    brokers: [...config.kafkaBrokers],
    clientId: `order-service-${names.run}`,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await reachable('Kafka', config.kafkaBrokers.join(','), () => admin.connect());
  await admin.createTopics({
    topics: [{ topic: names.orderTopic, numPartitions: PARTITIONS, replicationFactor: 1 }],
    waitForLeaders: true,
  });
  const producer = kafka.producer();
  await producer.connect();
  const connection: ChannelModel = await reachable('RabbitMQ', config.amqpUrl, () =>
    amqplib.connect(config.amqpUrl),
  );
  const channel = await connection.createConfirmChannel();
  // Declared as the shipping consumer declares it, so the payments relay can publish to it
  // before shipping first starts.
  await channel.assertQueue(names.paymentQueue, { durable: true });
  const ledger = await sqlLedger(config.databaseUrl, names.schemas.provider);

  const close = async (keep: boolean): Promise<void> => {
    await producer.disconnect();
    if (!keep) {
      const topics = await admin.listTopics();
      const ours = [names.orderTopic, `${names.orderTopic}.dlq`].filter((t) => topics.includes(t));
      if (ours.length > 0) await admin.deleteTopics({ topics: ours });
      // The payments processes are stopped by now: an empty group can be deleted.
      await admin.deleteGroups([names.paymentsGroup]).catch(() => undefined);
      const queue = names.paymentQueue;
      for (const name of [
        queue,
        `${queue}.dead`,
        `${queue}.retry.200ms`,
        `${queue}.retry.1000ms`,
      ]) {
        await channel.deleteQueue(name);
      }
      await channel.deleteExchange(`${queue}.dlx`);
      for (const store of [...Object.values(stores), provider]) await dropSchema(provider, store);
    }
    await admin.disconnect();
    await connection.close();
    await ledger.close();
    await Promise.all(Object.values(stores).map((store) => store.close()));
    await provider.close();
  };
  return { stores, ledger, admin, producer, channel, close };
}
