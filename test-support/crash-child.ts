/**
 * The inbox crash tests' child process, both halves in one file: the parent spawns this file
 * with a {@link CrashJob}, the child runs a consumer (or one delivery) through the inbox on
 * PostgreSQL, writes one effect per message, and when it reaches the step it was told to stop
 * at it reports that on stdout and hangs, so the parent kills it with SIGKILL exactly there
 * (the way a crash or an OOM kill would). What differs per transport is only how the consumer
 * is built, which the job's `transport` part says; the inbox, the handler and the reports are
 * the same for all of them. Spawning, reports and killing are the harness's, in
 * `child-process.ts`.
 */
import {
  createInbox,
  createOperations,
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
        'clientConfig' | 'queueUrl' | 'concurrency' | 'waitTimeSeconds' | 'visibilityTimeoutSeconds'
      >;
    }
  | { readonly kind: 'rabbitmq'; readonly options: Pick<RabbitConsumerOptions, 'url' | 'queue'> };

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
  /** The one delivery of an `inbox` job was processed to this outcome. */
  | { readonly type: 'outcome'; readonly status: InboxOutcome['status'] };

const crashChild = childModule<CrashJob, CrashReport>(__filename, 'CRASH_CHILD');

// ---------------------------------------------------------------------------------------------
// The parent's half.

/** A running child. */
export type CrashChild = SpawnedChild<CrashReport>;

/** Spawns a child on this file (through tsx) with the job. */
export function spawnCrashChild(job: CrashJob): CrashChild {
  return crashChild.spawn(job, job.crashAt === undefined ? {} : { JUSTONCE_CRASH_AT: job.crashAt });
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
  }
  crashChild.report({ type: 'started' });
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
    if (event.outcome?.status !== 'dead-lettered') return;
    crashChild.report({
      type: 'dead-lettered',
      messageId: event.messageId,
      attempt: event.outcome.attempt,
    });
  };
  await runTransport(job.transport, { store, inbox, handler, onSettled });
}

// Run as the child only when spawned on this file, not when a test imports the parent's half.
if (require.main === module) runChild(childMain);
