/**
 * `justonce outbox requeue | delete` on events made dead by a real relay whose broker refused
 * them, and pending ones from the real outbox: by id and by filter, --dry-run, --yes.
 */
import { countRows, expectRefused, snapshot } from './cli-process';
import { useOutboxSchema } from './seed';

const db = useOutboxSchema('cli_outbox_act');
const { inSchema, idsOf } = db;

describe('requeue and delete', () => {
  it('requeue --dry-run, then by id: dead becomes pending with a new id', async () => {
    const [first] = await idsOf('dead', 'orders');
    const before = await snapshot(db.store);
    const dry = await inSchema('outbox', 'requeue', '--destination', 'orders', '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/would requeue 3 outbox events/);
    expect(await snapshot(db.store)).toEqual(before);
    const run = await inSchema('outbox', 'requeue', first!);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`outbox event ${first} → new outbox event \\d+`));
    expect(await idsOf('dead', 'orders')).toHaveLength(2);
    expect(
      await countRows(db.store, 'outbox', `destination = 'orders' and status = 'pending'`),
    ).toBe(1);
  });

  it('a bulk requeue off a terminal needs --yes: exit 2, nothing changed', async () => {
    await expectRefused(
      db.store,
      ['outbox', 'requeue', '--destination', 'orders'],
      /requeue 2 outbox events: a bulk action needs --yes/,
    );
    const yes = await inSchema('outbox', 'requeue', '--destination', 'orders', '--yes', '--json');
    expect(yes.code).toBe(0);
    expect(JSON.parse(yes.stdout).requeued).toHaveLength(2);
    expect(await idsOf('dead', 'orders')).toEqual([]);
  });

  it('requeue refuses an event that is not dead: exit 1, nothing changed', async () => {
    const [pending] = await idsOf('pending', 'invoices');
    await expectRefused(
      db.store,
      ['outbox', 'requeue', pending!],
      /is pending: only dead events are requeued\nnothing changed/,
      1,
    );
  });

  it('delete by id with --status keeps only the ids of that status', async () => {
    const [pending] = await idsOf('pending', 'invoices');
    const before = await snapshot(db.store);
    const run = await inSchema('outbox', 'delete', pending!, '--status', 'dead', '--yes');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/no outbox events match; nothing changed/);
    expect(await snapshot(db.store)).toEqual(before);
  });

  it('delete: a dead event by id, pending ones by --status with --yes', async () => {
    const [dead] = await idsOf('dead', 'emails');
    const one = await inSchema('outbox', 'delete', dead!);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/deleted 1 outbox event/);
    const bulk = await inSchema(
      'outbox',
      'delete',
      '--status',
      'pending',
      '--destination',
      'invoices',
      '--yes',
    );
    expect(bulk.code).toBe(0);
    expect(bulk.stdout).toMatch(/deleted 2 outbox events/);
    expect(await countRows(db.store, 'outbox', `destination in ('emails', 'invoices')`)).toBe(0);
  });
});

describe('bad arguments: clear message, exit 2, nothing changed', () => {
  it.each([
    [['outbox', 'requeue'], /say which events/],
    [['outbox', 'requeue', '--status', 'pending', '--all'], /unknown option '--status'/],
    [['outbox', 'delete', '0'], /outbox event ids are positive integers/],
    [['outbox', 'delete', '--destination', ''], /--destination must not be empty/],
  ])('%j', async (args, message) => {
    await expectRefused(db.store, args, message);
  });
});
