/**
 * A consumer process for the crash-poison test. It consumes in `POISON_MODE`; when the handler
 * meets the record whose value is `poison`, it prints `AT-STEP crash attempt=<n>
 * first=<declared>` and stops dead, so the parent can kill it with SIGKILL there. When the
 * inbox dead-letters that record instead, it prints `AT-STEP dead-lettered` and goes on.
 */
import { createInbox, createStore } from '@justonce/core';
import { createKafkaConsumer } from '@justonce/kafka';
import { requiredEnv } from '../../../test-support/child-process';
import { FAST_GROUP } from './fast-group';

async function main(): Promise<void> {
  const schema = requiredEnv('POISON_SCHEMA');
  const store = await createStore({ connectionString: requiredEnv('DATABASE_URL'), schema });
  const effects = `"${schema}"."effects"`;
  const consumer = createKafkaConsumer({
    brokers: requiredEnv('KAFKA_BROKERS').split(','),
    groupId: requiredEnv('POISON_GROUP'),
    topics: [requiredEnv('POISON_TOPIC')],
    fromBeginning: true,
    mode: requiredEnv('POISON_MODE') === 'message' ? 'message' : 'batch',
    batchSize: Number(requiredEnv('POISON_BATCH_SIZE')),
    consumerConfig: FAST_GROUP,
    inbox: createInbox({
      store,
      consumer: requiredEnv('POISON_CONSUMER'),
      maxAttempts: Number(requiredEnv('POISON_MAX_ATTEMPTS')),
    }),
    handler: async (ctx) => {
      if (Buffer.from(ctx.message.body).toString() === 'poison') {
        const first = ctx.message.delivery.redelivered === false;
        process.stdout.write(`AT-STEP crash attempt=${ctx.attempt} first=${first}\n`);
        await new Promise(() => undefined);
      }
      await ctx.trx.raw(`insert into ${effects} (message_id, consumer) values (?, ?)`, [
        ctx.messageId,
        'child',
      ]);
    },
    onSettled: ({ outcome }) => {
      if (outcome?.status === 'dead-lettered') {
        process.stdout.write(`AT-STEP dead-lettered attempt=${outcome.attempt}\n`);
      }
    },
  });
  await consumer.start();
  process.stdout.write('STARTED\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
