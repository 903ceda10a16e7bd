/**
 * `justonce cleanup`: retention run now, with the counts it deleted per table, on dedup
 * records, dead letters and published outbox rows made by the real inbox and relay.
 */
import { createInbox, createRelay, type Publisher, type Store } from '@justonce/core';
import { cliOnTerminal, countRows, expectRefused, snapshot, useSchema } from './cli-process';
import { deadLetters, pendingEvents } from './seed';

/** A broker that takes everything. */
const accepting: Publisher = {
  publish: async (messages) => messages.map((m) => ({ messageId: m.messageId, ok: true as const })),
  close: async () => undefined,
};

/**
 * Dedup records of `shipping`, dead letters of `billing`, and outbox rows the relay published
 * and kept, all old enough for a cleanup with windows of one second.
 */
async function seed(store: Store): Promise<void> {
  const inbox = createInbox({ store, consumer: 'shipping', retentionMs: 500 });
  for (const id of ['s-1', 's-2', 's-3']) {
    await inbox.process({ id, headers: {}, body: '{}', delivery: {} }, async () => 'ok');
  }
  await deadLetters(store, 'billing', ['b-1', 'b-2'], 'payments');
  await pendingEvents(store, 'orders', 2);
  // The relay keeps what it published, for cleanup to delete.
  await createRelay({ store, publisher: accepting, notify: false, onPublished: 'keep' }).runOnce();
  await new Promise((r) => setTimeout(r, 1200));
}

const db = useSchema('cli_cleanup', seed);
const { inSchema } = db;

describe('cleanup', () => {
  it('with the defaults: nothing this young is deleted, dead letters are kept', async () => {
    const before = await snapshot(db.store);
    const run = await inSchema('cleanup', '--json');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ deleted: 0, outboxDeleted: 0, complete: true });
    expect(result.tables.dead_letters.skipped).toBe('disabled');
    expect(await snapshot(db.store)).toEqual(before);
  });

  it('with short windows: deletes and prints the counts per table', async () => {
    expect(await countRows(db.store, 'outbox', `status = 'published'`)).toBe(2);
    const run = await inSchema(
      'cleanup',
      '--retention',
      '1s',
      '--dead-letters',
      '1s',
      '--published',
      '1s',
      '--batch-size',
      '1',
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/idempotency\s*│\s*\d+\s*│\s*yes/);
    expect(run.stdout).toMatch(/dead_letters\s*│\s*2\s*│\s*yes/);
    expect(run.stdout).toMatch(/outbox \(published\)\s*│\s*2\s*│/);
    expect(run.stdout).toMatch(/deleted \d+ rows \(retention 1s\)/);
    expect(await countRows(db.store, 'dead_letters')).toBe(0);
    expect(await countRows(db.store, 'outbox')).toBe(0);
    expect(await countRows(db.store, 'idempotency', `operation = 'shipping'`)).toBe(0);
  });
});

describe('on a terminal', () => {
  it('shows its progress per table on stderr', async () => {
    const run = await cliOnTerminal(['--schema', db.store.schema, 'cleanup'], '');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /cleaning up: idempotency 0, inbox_records 0, inbox_attempts 0.*outbox 0/,
    );
    expect(run.stdout).toMatch(/deleted 0 rows/);
  });
});

describe('bad arguments: clear message, exit 2, nothing changed', () => {
  it.each([
    [['cleanup', '--retention', '7 days'], /--retention must be a duration such as 7d/],
    [['cleanup', '--published', '0s'], /--published must be a duration/],
    [['cleanup', '--dead-letters', '-1d'], /--dead-letters must be a duration/],
    [['cleanup', '--retention', '20y'], /--retention must be a duration/],
    [['cleanup', '--batch-size', '0'], /--batch-size must be an integer from 1 to 100000/],
  ])('%j', async (args, message) => {
    await expectRefused(db.store, args, message);
  });
});
