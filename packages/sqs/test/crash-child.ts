/**
 * A consumer process for the crash test. When the inbox reaches `CRASH_STEP` after
 * `CRASH_AFTER` effects were written, it prints `AT-STEP` and stops dead (holding its
 * messages), so the parent can kill it with SIGKILL exactly there.
 */
import { createInbox, createStore } from '@justonce/core';
import { createSqsConsumer } from '@justonce/sqs';
import { requiredEnv } from '../../../test-support/child-process';

async function main(): Promise<void> {
  const schema = requiredEnv('CRASH_SCHEMA');
  const crashStep = requiredEnv('CRASH_STEP');
  const crashAfter = Number(requiredEnv('CRASH_AFTER'));
  const consumer = requiredEnv('CRASH_CONSUMER');
  const store = await createStore({ connectionString: requiredEnv('DATABASE_URL'), schema });
  let written = 0;
  let frozen = false;
  const sqsConsumer = createSqsConsumer({
    clientConfig: {
      endpoint: requiredEnv('SQS_ENDPOINT'),
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    },
    queueUrl: requiredEnv('CRASH_QUEUE_URL'),
    concurrency: 4,
    waitTimeSeconds: 1,
    visibilityTimeoutSeconds: 2,
    inbox: createInbox({
      store,
      consumer,
      onStep: async (step) => {
        if (frozen || step !== crashStep || written < crashAfter) return;
        frozen = true;
        process.stdout.write('AT-STEP\n');
        await new Promise(() => undefined);
      },
    }),
    handler: async (ctx) => {
      await ctx.trx.raw(
        `insert into "${schema}"."effects" (consumer, message_id, note) values (?, ?, ?)`,
        [consumer, ctx.messageId, 'child'],
      );
      written++;
    },
  });
  await sqsConsumer.start();
  process.stdout.write('STARTED\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
