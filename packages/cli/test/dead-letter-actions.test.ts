/**
 * `justonce dead-letters requeue | delete`: selection by ids and filters, --dry-run, --yes
 * for bulk actions off a terminal, bad arguments. The terminal's prompt and progress bar, and
 * the handling of a requeued letter by a running consumer: dead-letter-redelivery.test.ts.
 */
import { createAdmin, createInbox } from '@justonce/core';
import { countRows, expectRefused, snapshot, useSchema } from './cli-process';
import { deadLetters } from './seed';

const db = useSchema('cli_dl');
const { inSchema } = db;
const waiting = (consumer: string) =>
  countRows(db.store, 'dead_letters', `consumer = '${consumer}' and requeued_at is null`);
const idsOf = async (consumer: string) =>
  (await createAdmin(db.store).deadLetters.list({ consumer, includeRequeued: false })).map(
    (l) => l.id,
  );

describe('requeue', () => {
  beforeAll(() => deadLetters(db.store, 'billing', ['b-1', 'b-2', 'b-3'], 'payments'));

  it('--dry-run lists what would be requeued and changes nothing', async () => {
    const before = await snapshot(db.store);
    const run = await inSchema('dead-letters', 'requeue', '--consumer', 'billing', '--dry-run');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/would requeue 3 dead letters \(dry run, nothing changed\)/);
    expect(run.stdout).toMatch(/billing\s*│\s*MAX_ATTEMPTS\s*│\s*b-2\s*│\s*payments/);
    const json = await inSchema(
      'dead-letters',
      'requeue',
      '--consumer',
      'billing',
      '--dry-run',
      '--json',
    );
    expect(JSON.parse(json.stdout)).toEqual({ dryRun: true, requeue: await idsOf('billing') });
    expect(await snapshot(db.store)).toEqual(before);
  });

  it('a bulk action off a terminal without --yes: exit 2, nothing changed', async () => {
    await expectRefused(
      db.store,
      ['dead-letters', 'requeue', '--consumer', 'billing'],
      /requeue 3 dead letters: a bulk action needs --yes when not run on a terminal; nothing changed/,
    );
  });

  it('one letter by id needs no --yes; it goes to the outbox for its source', async () => {
    const [first] = await idsOf('billing');
    const run = await inSchema('dead-letters', 'requeue', first!);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`requeued 1 dead letter\\n  dead letter ${first} → outbox event \\d+`),
    );
    expect(
      await countRows(db.store, 'outbox', `destination = 'payments' and message_id = 'b-1'`),
    ).toBe(1);
    expect(await waiting('billing')).toBe(2);
  });

  it('the rest by filter with --yes and --to, as JSON', async () => {
    const run = await inSchema(
      'dead-letters',
      'requeue',
      '--consumer',
      'billing',
      '--to',
      'payments-retry',
      '--yes',
      '--json',
    );
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.requeued).toHaveLength(2);
    expect(result.failed).toEqual([]);
    expect(await countRows(db.store, 'outbox', `destination = 'payments-retry'`)).toBe(2);
    expect(await waiting('billing')).toBe(0);
  });

  it('a letter without a source needs --to: exit 2, nothing changed', async () => {
    await deadLetters(db.store, 'nosource', ['n-1']);
    const [id] = await idsOf('nosource');
    await expectRefused(
      db.store,
      ['dead-letters', 'requeue', id!],
      new RegExp(`dead letter ${id} has no source to publish to; pass --to`),
    );
    const to = await inSchema('dead-letters', 'requeue', id!, '--to', 'somewhere');
    expect(to.code).toBe(0);
    expect(await countRows(db.store, 'outbox', `destination = 'somewhere'`)).toBe(1);
  });
});

describe('requeue, letters it cannot requeue as they are', () => {
  beforeAll(async () => {
    await deadLetters(db.store, 'mixed', ['x-1'], 'orders');
    await deadLetters(db.store, 'mixed', ['x-2']);
    // No id: dead-lettered as MISSING_MESSAGE_ID without reaching the handler.
    const inbox = createInbox({ store: db.store, consumer: 'mixed', maxAttempts: 1 });
    await inbox.process(
      { scope: 'default', headers: {}, body: '{}', delivery: { source: 'orders' } } as never,
      async () => 'ok',
    );
  });
  const byId = async () => {
    const letters = await createAdmin(db.store).deadLetters.list({ consumer: 'mixed' });
    const id = (f: (l: (typeof letters)[number]) => boolean) => letters.find(f)!.id;
    return {
      sourced: id((l) => l.messageId === 'x-1'),
      sourceless: id((l) => l.messageId === 'x-2'),
      anonymous: id((l) => l.messageId === null),
    };
  };

  it('a letter without a message id, named: exit 1 before anything changes, even the others', async () => {
    const { sourced, anonymous } = await byId();
    await expectRefused(
      db.store,
      ['dead-letters', 'requeue', sourced, anonymous, '--yes'],
      new RegExp(`dead letter ${anonymous} cannot be requeued: it has no message id`),
      1,
    );
  });

  it('--dry-run lists every letter, marks the one that needs --to, and exits 2', async () => {
    const { sourced, sourceless, anonymous } = await byId();
    const before = await snapshot(db.store);
    const run = await inSchema('dead-letters', 'requeue', '--consumer', 'mixed', '--dry-run');
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/would requeue 2 dead letters/);
    expect(run.stdout).toMatch(new RegExp(`${sourced}\\s*│.*│\\s*orders\\s*│`));
    expect(run.stdout).toMatch(new RegExp(`${sourceless}\\s*│.*\\(needs --to\\)`));
    expect(run.stderr).toMatch(new RegExp(`skipping dead letter ${anonymous}: no message id`));
    expect(run.stderr).toMatch(new RegExp(`dead letter ${sourceless} has no source`));
    expect(await snapshot(db.store)).toEqual(before);
  });

  it('by filter with --to: skips the letter without a message id and requeues the rest', async () => {
    const { anonymous } = await byId();
    const run = await inSchema(
      'dead-letters',
      'requeue',
      '--consumer',
      'mixed',
      '--to',
      'orders',
      '--yes',
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/requeued 2 dead letters/);
    expect(run.stderr).toMatch(new RegExp(`skipping dead letter ${anonymous}`));
    expect(await waiting('mixed')).toBe(1);
    expect(await countRows(db.store, 'outbox', `message_id in ('x-1', 'x-2')`)).toBe(2);
  });
});

describe('delete', () => {
  beforeAll(() => deadLetters(db.store, 'mailer', ['m-1', 'm-2', 'm-3'], 'emails'));

  it('by id, then by filter with --yes', async () => {
    const [one, ...rest] = await idsOf('mailer');
    const single = await inSchema('dead-letters', 'delete', one!);
    expect(single.code).toBe(0);
    expect(single.stdout).toMatch(/deleted 1 dead letter/);
    expect(await idsOf('mailer')).toEqual(rest);
    const bulk = await inSchema(
      'dead-letters',
      'delete',
      '--reason',
      'MAX_ATTEMPTS',
      '--consumer',
      'mailer',
      '--yes',
    );
    expect(bulk.code).toBe(0);
    expect(bulk.stdout).toMatch(/deleted 2 dead letters/);
    expect(await countRows(db.store, 'dead_letters', `consumer = 'mailer'`)).toBe(0);
  });

  it('nothing matching: exit 0, nothing changed', async () => {
    const run = await inSchema('dead-letters', 'delete', '--consumer', 'nobody');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/no dead letters match; nothing changed/);
  });
});

describe('bad arguments: clear message, exit 2, nothing changed', () => {
  it.each([
    [['dead-letters', 'requeue'], /say which letters/],
    [['dead-letters', 'delete', 'abc'], /dead letter ids are positive integers/],
    [['dead-letters', 'requeue', '--ids', '1,,2'], /dead letter ids are positive integers/],
    [['dead-letters', 'delete', '--reason', 'SOMETIMES'], /--reason must be one of/],
    [['dead-letters', 'delete', '--since', 'tomorrow', '--all'], /--since must be an ISO 8601/],
    [['dead-letters', 'requeue', '--all', '--to', ''], /--to must not be empty/],
    [['dead-letters', 'requeue', '--all', '--limit', '0'], /--limit must be an integer from 1/],
    [
      ['dead-letters', 'delete', '--all', '--since', '2026-02-01', '--until', '2026-01-01'],
      /--since is after --until/,
    ],
  ])('%j', async (args, message) => {
    await expectRefused(db.store, args, message);
  });

  it('an id that does not exist: exit 1, nothing changed (not even the ids that do)', async () => {
    await deadLetters(db.store, 'exists', ['e-1']);
    const [id] = await idsOf('exists');
    await expectRefused(
      db.store,
      ['dead-letters', 'delete', id!, '999999', '--yes'],
      /no dead letter 999999; nothing changed/,
      1,
    );
  });
});
