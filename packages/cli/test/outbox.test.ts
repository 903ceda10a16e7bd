/**
 * `justonce outbox list | show` on events made dead by a real relay whose broker refused
 * them, and pending ones from the real outbox. Requeue and delete: outbox-actions.test.ts.
 */
import { expectRefused } from './cli-process';
import { useOutboxSchema } from './seed';

const db = useOutboxSchema('cli_outbox');
const { inSchema, idsOf } = db;

describe('list and show', () => {
  it('lists dead events by default, exit 1 when any', async () => {
    const run = await inSchema('outbox', 'list');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/orders\s*│\s*dead\s*│/);
    expect(run.stdout).toMatch(/unroutable: no such topic/);
    const json = await inSchema('outbox', 'list', '--destination', 'orders', '--json');
    const events = JSON.parse(json.stdout) as { id: string; status: string; payload: string }[];
    expect(events.map((e) => e.status)).toEqual(['dead', 'dead', 'dead']);
    expect(events[0]!.payload).toBe('{"n":0}');
  });

  it('--status pending and stuck, --ids, --limit, time range', async () => {
    const pending = await inSchema('outbox', 'list', '--status', 'pending', '--json');
    expect(pending.code).toBe(0);
    expect(JSON.parse(pending.stdout)).toHaveLength(2);
    const stuck = await inSchema('outbox', 'list', '--status', 'stuck', '--stuck-after', '1h');
    expect(stuck.code).toBe(0);
    expect(stuck.stdout).toMatch(/no stuck outbox events match/);
    const [a, , c] = await idsOf('dead', 'orders');
    const byIds = await inSchema('outbox', 'list', '--ids', `${a},${c}`, '--json');
    expect((JSON.parse(byIds.stdout) as { id: string }[]).map((e) => e.id)).toEqual([a, c]);
    const limited = await inSchema('outbox', 'list', '--limit', '2', '--json');
    expect(JSON.parse(limited.stdout)).toHaveLength(2);
    const future = await inSchema('outbox', 'list', '--since', '2999-01-01');
    expect(future.code).toBe(0);
  });

  it('show prints the facts, headers, payload and last error; exit 1 for none', async () => {
    const [id] = await idsOf('dead', 'emails');
    const run = await inSchema('outbox', 'show', id!);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`outbox event ${id}\\n  destination:   emails`));
    expect(run.stdout).toContain('{\n  "n": 0\n}');
    expect(run.stdout).toMatch(/last error\n {2}.*unroutable/);
    const json = await inSchema('outbox', 'show', id!, '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ id, status: 'dead', payloadEncoding: 'text' });
    const none = await inSchema('outbox', 'show', '987654');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no outbox event 987654/);
  });
});

describe('bad arguments: clear message, exit 2, nothing changed', () => {
  it.each([
    [['outbox', 'list', '--status', 'lost'], /--status must be one of dead, pending, stuck/],
    [['outbox', 'list', '--stuck-after', '5m'], /--stuck-after goes with --status stuck/],
    [
      ['outbox', 'list', '--status', 'stuck', '--stuck-after', 'soon'],
      /--stuck-after must be a duration/,
    ],
    [['outbox', 'list', '--limit', 'many'], /--limit must be an integer/],
    [['outbox', 'list', '--until', 'never'], /--until must be an ISO 8601/],
    [['outbox', 'show', 'x1'], /an outbox event id is a positive integer/],
  ])('%j', async (args, message) => {
    await expectRefused(db.store, args, message);
  });
});
