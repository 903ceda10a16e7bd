import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInbox, rowsOf, type DeliveryFacts, type InboxStep } from '../src';
import { databaseUrl, openTestStore } from './db';
import type { ChildJob } from './fixtures/inbox-child';
import {
  countEffects,
  countRows,
  createEffectsTable,
  envelope,
  freshId,
  writeEffect,
} from './fixtures/inbox-support';

const REPO_ROOT = resolve(__dirname, '..', '..', '..');
const CHILD = join(__dirname, 'fixtures', 'inbox-child.ts');

interface ChildResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the child consumer once and resolves when it exits (normally or killed). */
function runChild(job: ChildJob): Promise<ChildResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
      cwd: REPO_ROOT,
      env: { ...process.env, INBOX_CHILD_JOB: JSON.stringify(job) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
}

describe('inbox crash safety on postgres (child processes killed with SIGKILL)', () => {
  let store: Awaited<ReturnType<typeof openTestStore>>;

  beforeAll(async () => {
    store = await openTestStore('postgres');
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const job = (extra: Partial<ChildJob>): ChildJob => ({
    databaseUrl: databaseUrl(),
    schema: store.schema,
    consumer: 'crashy',
    messageId: freshId('crash'),
    body: 'payload',
    ...extra,
  });

  async function killedAt(killAt: InboxStep | undefined, extra: Partial<ChildJob> = {}) {
    const result = await runChild(job({ killAt, ...extra }));
    expect({ signal: result.signal, stderr: result.stderr }).toEqual({
      signal: 'SIGKILL',
      stderr: '',
    });
    return result;
  }

  const redeliver = (messageId: string, delivery: DeliveryFacts = {}, maxAttempts?: number) => {
    let ran = false;
    const inbox = createInbox({ store, consumer: 'crashy', maxAttempts });
    return inbox
      .process(envelope(messageId, 'payload', { delivery }), async (ctx) => {
        ran = true;
        await writeEffect(ctx.trx, store, ctx.scope, ctx.messageId);
      })
      .then((outcome) => ({ outcome, ran }));
  };

  it('killed before commit (at handler-done): nothing commits, the redelivery runs it once', async () => {
    const messageId = freshId('before-commit');
    await killedAt('handler-done', { messageId });
    expect(await countEffects(store, messageId)).toBe(0);
    const { outcome, ran } = await redeliver(messageId);
    expect(ran).toBe(true);
    expect(outcome).toMatchObject({ status: 'processed', attempt: 2 });
    expect(await countEffects(store, messageId)).toBe(1);
  });

  it('killed after commit, before ack (at committed): the redelivery is a duplicate', async () => {
    const messageId = freshId('after-commit');
    await killedAt('committed', { messageId });
    expect(await countEffects(store, messageId)).toBe(1);
    const { outcome, ran } = await redeliver(messageId);
    expect(ran).toBe(false);
    expect(outcome.status).toBe('duplicate');
    expect(await countEffects(store, messageId)).toBe(1);
  });

  it('a message that kills the process every time is dead-lettered after maxAttempts deliveries', async () => {
    const messageId = freshId('poison');
    for (let i = 0; i < 3; i++) {
      await killedAt(undefined, { messageId, killInHandler: true, maxAttempts: 3 });
    }
    expect(await countEffects(store, messageId)).toBe(0);
    const { outcome, ran } = await redeliver(messageId, {}, 3);
    expect(ran).toBe(false);
    expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS', attempt: 4 });
    expect(await countEffects(store, messageId)).toBe(0);
  });

  it('the poison is caught even when first deliveries skip the counting write (redelivered flag)', async () => {
    const messageId = freshId('poison-flag');
    const deliveries: DeliveryFacts[] = [
      { redelivered: false },
      { redelivered: true },
      { redelivered: true },
    ];
    for (const delivery of deliveries) {
      await killedAt(undefined, { messageId, delivery, killInHandler: true, maxAttempts: 3 });
    }
    const { outcome, ran } = await redeliver(messageId, { redelivered: true }, 3);
    expect(ran).toBe(false);
    expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS', attempt: 4 });
  });

  it('dead-lettering then dying before the ack leaves one dead letter; the redelivery is acknowledged', async () => {
    const messageId = freshId('dead-crash');
    const before = await countRows(store, 'dead_letters');
    await killedAt('committed', { messageId, decodeFails: true });
    const letters = async () =>
      rowsOf<{ reason: string }>(
        await store.knex.raw(
          `select reason from ${store.names.table('dead_letters')} where message_id = ?`,
          [messageId],
        ),
      );
    expect(await letters()).toEqual([{ reason: 'UNDECODABLE_BODY' }]);
    const result = await runChild(job({ messageId, decodeFails: true }));
    expect(result.stdout.trim()).toBe('{"status":"dead-lettered"}');
    expect(await letters()).toHaveLength(1);
    expect(await countRows(store, 'dead_letters')).toBe(before + 1);
  });
});
