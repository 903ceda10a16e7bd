/**
 * The inbox crash tests' child process, both halves in one file: the parent spawns this file
 * with a {@link CrashJob}, the child runs a consumer (or one delivery) through the inbox on
 * PostgreSQL, writes one effect per message, and when it reaches the step it was told to stop
 * at it reports that on stdout and hangs, so the parent kills it with SIGKILL exactly there
 * (the way a crash or an OOM kill would). What differs per transport is only how the consumer
 * is built, which the job's `transport` part says; the inbox, the handler and the reports are
 * the same for all of them. Spawning, reports and killing are the harness's, in
 * `child-process.ts`.
 *
 * The crash-point matrix (`crash-matrix/`) spawns the same child with `JUSTONCE_CRASH_AT` in
 * its environment instead of a `stopAt`: the child then kills itself at that crash point. For
 * it the child also runs a relay from the store's outbox to the transport (`relay`), reports
 * every settled delivery, and has a `memory` transport whose broker state the parent keeps.
 */
import {
  createInbox,
  createOperations,
  createRelay,
  createStore,
  type DeliveryFacts,
  type Handler,
  type Inbox,
  type InboxDedupMode,
  type InboxOutcome,
  type InboxStep,
  type SettledEvent,
  type Store,
} from '@justonce/core';
import { createMemoryBroker } from '@justonce/core/testing';
import { decide, type Publisher } from '@justonce/core/transport';
import type { KafkaConsumerOptions } from '@justonce/kafka';
import type { RabbitConsumerOptions } from '@justonce/rabbitmq';
import type { SqsConsumerOptions } from '@justonce/sqs';
import { childModule, hang, killChildren, runChild, type SpawnedChild } from './child-process';
import { writeEffect, writeRemoteEffect } from './effects';

/** How the child gets its messages: the part of a crash job that differs per transport. */
export type CrashTransport =
  /** No broker: the inbox processes this one delivery, the child reports the outcome and exits. */
  | {
      readonly kind: 'inbox';
      readonly messageId: string;
      readonly body: string;
      readonly delivery?: DeliveryFacts;
    }
  | {
      readonly kind: 'kafka';
      readonly options: Pick<
        KafkaConsumerOptions,
        | 'brokers'
        | 'client'
        | 'groupId'
        | 'topics'
        | 'fromBeginning'
        | 'mode'
        | 'batchSize'
        | 'consumerConfig'
      >;
    }
  | {
      readonly kind: 'sqs';
      readonly options: Pick<
        SqsConsumerOptions,
        | 'clientConfig'
        | 'queueUrl'
        | 'concurrency'
        | 'waitTimeSeconds'
        | 'visibilityTimeoutSeconds'
        | 'mode'
      >;
    }
  | {
      readonly kind: 'rabbitmq';
      readonly options: Pick<
        RabbitConsumerOptions,
        'url' | 'queue' | 'mode' | 'batchSize' | 'batchWaitMs' | 'prefetch'
      >;
    }
  /**
   * The in-memory transport, its broker in the parent: the child gets the copies not yet
   * acknowledged, reports each acknowledgement, and the parent hands what is left to the next
   * child. `message` mode runs them through the memory broker's consumer; `batch` mode through
   * the inbox's batch API in chunks of `batchSize`, each outcome through core's `decide`.
   */
  | {
      readonly kind: 'memory';
      readonly mode: 'message' | 'batch';
      readonly batchSize: number;
      readonly messages: readonly { readonly id: string; readonly body: string }[];
    };

/** A relay the child runs beside its consumer: the store's outbox to `destination`. */
export interface CrashRelay {
  /** Where the relay publishes: a topic, queue URL or queue name of the job's transport. */
  readonly destination: string;
  readonly batchSize: number;
}

/** What the parent asks the child to do. Plain data: it travels as JSON. */
export interface CrashJob {
  readonly databaseUrl: string;
  readonly schema: string;
  /** The inbox consumer name; also written to each effect's `consumer` column. */
  readonly consumer: string;
  readonly maxAttempts?: number;
  /** The inbox's dedup mode (default `ids`). */
  readonly dedup?: InboxDedupMode;
  /** Stop at this inbox step… */
  readonly stopAt?: InboxStep;
  /** …once at least this many effects were written in this process (default 0). */
  readonly stopAfter?: number;
  /** Stop inside the handler, after its business write, on the message with this body. */
  readonly stopInHandlerOn?: string;
  /** Use a decoder that always throws. */
  readonly decodeFails?: boolean;
  /**
   * Before its business write, the handler makes a remote call through `ctx.once(step, …)`
   * (`writeRemoteEffect`), recorded in a ledger with this lease and wait.
   */
  readonly once?: { readonly step: string; readonly leaseMs: number; readonly waitMs?: number };
  /**
   * Sets `JUSTONCE_CRASH_AT` in the child: it kills itself at this crash point of core
   * (`once.after-effect`: the remote call made, its record not written).
   */
  readonly crashAt?: string;
  readonly transport: CrashTransport;
  /** Also run a relay publishing the store's outbox through the transport's publisher. */
  readonly relay?: CrashRelay;
}

/** What the child reports on stdout, one line each. */
export type CrashReport =
  | { readonly type: 'started' }
  /** Stopped where it was told and hangs until killed. */
  | {
      readonly type: 'stopped';
      readonly at: InboxStep | 'handler';
      readonly messageId: string | undefined;
      /** For a stop in the handler: the attempt the inbox gave it. */
      readonly attempt?: number;
      /** For a stop in the handler: whether the transport declared it a first delivery. */
      readonly first?: boolean;
    }
  | {
      readonly type: 'dead-lettered';
      readonly messageId: string | undefined;
      readonly attempt: number;
    }
  /** A delivery was settled: acknowledged, dead-lettered, redelivered, held… */
  | {
      readonly type: 'settled';
      readonly messageId: string | undefined;
      readonly action: SettledEvent['action'];
    }
  /** The one delivery of an `inbox` job was processed to this outcome. */
  | { readonly type: 'outcome'; readonly status: InboxOutcome['status'] };

const crashChild = childModule<CrashJob, CrashReport>(__filename, 'CRASH_CHILD');

// ---------------------------------------------------------------------------------------------
// The parent's half.

/** A running child. */
export type CrashChild = SpawnedChild<CrashReport>;

/** Spawns a child on this file (through tsx) with the job, and `env` added to its environment. */
export function spawnCrashChild(job: CrashJob, env?: Readonly<Record<string, string>>): CrashChild {
  return crashChild.spawn(job, {
    ...(job.crashAt === undefined ? {} : { JUSTONCE_CRASH_AT: job.crashAt }),
    ...env,
  });
}

/** Kills every child still running; for a test file's `afterEach`, so none outlives its test. */
export const killCrashChildren = killChildren;

// ---------------------------------------------------------------------------------------------
// The child's half.

/** What every transport's consumer is built from. */
interface ChildParts {
  readonly store: Store;
  readonly inbox: Inbox;
  readonly handler: Handler;
  readonly onSettled: (event: SettledEvent) => void;
}

/** Builds and starts the job's consumer (or processes its one delivery). */
async function runTransport(transport: CrashTransport, parts: ChildParts): Promise<void> {
  const { inbox, handler, onSettled } = parts;
  switch (transport.kind) {
    case 'inbox': {
      const envelope = {
        id: transport.messageId,
        headers: {},
        body: transport.body,
        delivery: transport.delivery ?? {},
      };
      const outcome = await inbox.process(envelope, handler);
      crashChild.report({ type: 'outcome', status: outcome.status });
      await parts.store.close();
      return;
    }
    // Each transport is imported only by the child that needs it.
    case 'kafka': {
      const { createKafkaConsumer } = await import('@justonce/kafka');
      await createKafkaConsumer({ ...transport.options, inbox, handler, onSettled }).start();
      break;
    }
    case 'sqs': {
      const { createSqsConsumer } = await import('@justonce/sqs');
      await createSqsConsumer({ ...transport.options, inbox, handler, onSettled }).start();
      break;
    }
    case 'rabbitmq': {
      const { createRabbitConsumer } = await import('@justonce/rabbitmq');
      await createRabbitConsumer({ ...transport.options, inbox, handler, onSettled }).start();
      break;
    }
    case 'memory':
      crashChild.report({ type: 'started' });
      await runMemory(transport, parts);
      return;
  }
  crashChild.report({ type: 'started' });
}

/** The `memory` transport's two modes (see {@link CrashTransport}). */
async function runMemory(
  transport: Extract<CrashTransport, { kind: 'memory' }>,
  { inbox, handler, onSettled }: ChildParts,
): Promise<void> {
  if (transport.mode === 'message') {
    const broker = createMemoryBroker();
    broker.send('matrix', transport.messages);
    await broker.consume('matrix', { inbox, handler, onSettled }).start();
    return;
  }
  const where = { consumer: inbox.consumer, source: 'matrix' };
  for (let start = 0; start < transport.messages.length; start += transport.batchSize) {
    const envelopes = transport.messages
      .slice(start, start + transport.batchSize)
      .map(({ id, body }) => ({ id, headers: {}, body, delivery: {} }));
    const outcomes = await inbox.processBatch(envelopes, handler);
    outcomes.forEach((outcome, i) => {
      if (decide(outcome, where).kind !== 'ack') return;
      onSettled({ action: 'acked', messageId: outcome.messageId, outcome, message: envelopes[i] });
    });
  }
}

/** The relay publisher of the job's transport. */
async function publisherOf(transport: CrashTransport): Promise<Publisher> {
  switch (transport.kind) {
    case 'kafka': {
      const { createKafkaPublisher } = await import('@justonce/kafka');
      const { brokers, client } = transport.options;
      return createKafkaPublisher({ ...(brokers ? { brokers } : {}), client });
    }
    case 'sqs': {
      const { createSqsPublisher } = await import('@justonce/sqs');
      return createSqsPublisher({ clientConfig: transport.options.clientConfig });
    }
    case 'rabbitmq': {
      const { createRabbitPublisher } = await import('@justonce/rabbitmq');
      return createRabbitPublisher({ url: transport.options.url });
    }
    default:
      throw new Error(`no relay publisher for the ${transport.kind} transport`);
  }
}

/** Starts the job's relay, if it has one: polling, woken by NOTIFY. */
async function startRelay(job: CrashJob, store: Store): Promise<void> {
  if (job.relay === undefined) return;
  const publisher = await publisherOf(job.transport);
  const { batchSize } = job.relay;
  await createRelay({ store, publisher, batchSize, pollIntervalMs: 200 }).start();
}

async function childMain(): Promise<void> {
  const job = crashChild.job();
  const store = await createStore({ connectionString: job.databaseUrl, schema: job.schema });
  let written = 0;
  // Only the first stop: the parent kills at it, and other deliveries in flight meanwhile go on.
  let stopped = false;
  const stop = (line: Extract<CrashReport, { type: 'stopped' }>): Promise<never> => {
    stopped = true;
    crashChild.report(line);
    return hang();
  };
  const inbox = createInbox({
    store,
    consumer: job.consumer,
    maxAttempts: job.maxAttempts,
    ...(job.dedup === undefined ? {} : { dedup: job.dedup }),
    ...(job.once === undefined
      ? {}
      : {
          ledger: createOperations({
            store,
            leaseMs: job.once.leaseMs,
            waitForInProgressMs: job.once.waitMs ?? 0,
          }),
        }),
    onStep: async (step, messageId) => {
      if (stopped || step !== job.stopAt || written < (job.stopAfter ?? 0)) return;
      await stop({ type: 'stopped', at: step, messageId });
    },
    decode: job.decodeFails
      ? () => {
          throw new Error('cannot decode');
        }
      : undefined,
  });
  const handler: Handler = async (ctx) => {
    const { once } = job;
    if (once !== undefined) {
      await ctx.once(once.step, (key) =>
        writeRemoteEffect(store, ctx.messageId, key, job.consumer),
      );
    }
    await writeEffect(ctx.trx, store, ctx.messageId, {
      scope: ctx.scope,
      consumer: job.consumer,
      note: 'child',
    });
    written++;
    const body = ctx.message.body;
    const text = typeof body === 'string' ? body : Buffer.from(body).toString();
    if (stopped || job.stopInHandlerOn === undefined || text !== job.stopInHandlerOn) return;
    await stop({
      type: 'stopped',
      at: 'handler',
      messageId: ctx.messageId,
      attempt: ctx.attempt,
      first: ctx.message.delivery.redelivered === false,
    });
  };
  const onSettled = (event: SettledEvent) => {
    crashChild.report({ type: 'settled', messageId: event.messageId, action: event.action });
    if (event.outcome?.status !== 'dead-lettered') return;
    crashChild.report({
      type: 'dead-lettered',
      messageId: event.messageId,
      attempt: event.outcome.attempt,
    });
  };
  await startRelay(job, store);
  await runTransport(job.transport, { store, inbox, handler, onSettled });
}

// Run as the child only when spawned on this file, not when a test imports the parent's half.
if (require.main === module) runChild(childMain);
