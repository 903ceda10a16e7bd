/**
 * A consumer process for the crash test. It consumes in batch mode and, when the inbox
 * reaches `CRASH_STEP` after `CRASH_AFTER` effects were written, prints `AT-STEP` and stops
 * dead, so the parent can kill it with SIGKILL exactly there.
 */
import { createInbox, createStore } from '@justonce/core';
import { createKafkaConsumer } from '@justonce/kafka';
import { requiredEnv } from '../../../test-support/child-process';
import { FAST_GROUP } from './fast-group';

async function main(): Promise<void> {
  const schema = requiredEnv('CRASH_SCHEMA');
  const crashStep = requiredEnv('CRASH_STEP');
  const crashAfter = Number(requiredEnv('CRASH_AFTER'));
  const store = await createStore({ connectionString: requiredEnv('DATABASE_URL'), schema });
  const effects = `"${schema}"."effects"`;
  let written = 0;
  let frozen = false;
  const consumer = createKafkaConsumer({
    brokers: requiredEnv('KAFKA_BROKERS').split(','),
    groupId: requiredEnv('CRASH_GROUP'),
    topics: [requiredEnv('CRASH_TOPIC')],
    fromBeginning: true,
    mode: 'batch',
    batchSize: 25,
    consumerConfig: FAST_GROUP,
    inbox: createInbox({
      store,
      consumer: requiredEnv('CRASH_CONSUMER'),
      onStep: async (step) => {
        if (frozen || step !== crashStep || written < crashAfter) return;
        frozen = true;
        process.stdout.write('AT-STEP\n');
        await new Promise(() => undefined);
      },
    }),
    handler: async (ctx) => {
      await ctx.trx.raw(`insert into ${effects} (message_id, consumer) values (?, ?)`, [
        ctx.messageId,
        'child',
      ]);
      written++;
    },
  });
  await consumer.start();
  process.stdout.write('STARTED\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
