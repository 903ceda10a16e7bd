/**
 * `justonce dead-letters list | show` on letters written by the real inbox: filters, the
 * letter's headers, body (pretty JSON or hex) and error, and bad arguments.
 */
import { createInbox } from '@justonce/core';
import { expectRefused, useSchema } from './cli-process';

const db = useSchema('cli_dl_list');
const { inSchema } = db;

describe('with letters from the real inbox', () => {
  beforeAll(async () => {
    const inbox = createInbox({ store: db.store, consumer: 'billing', maxAttempts: 1 });
    // No id: dead-lettered as MISSING_MESSAGE_ID without reaching the handler.
    await inbox.process(
      { scope: 'default', headers: { type: 'x' }, body: '{"a":1}', delivery: {} } as never,
      async () => 'ok',
    );
    // A handler that fails on its only attempt.
    await inbox.process(
      {
        id: 'm-1',
        scope: 'default',
        headers: { 'content-type': 'application/json' },
        body: '{"amount":42}',
        delivery: {
          source: 'payments',
          partition: 2,
          offset: '42',
          position: { topic: 'payments', partition: 2, offset: '42' },
        },
      },
      async () => {
        throw new Error('card declined');
      },
    );
    await inbox.process(
      {
        id: 'm-2',
        scope: 'default',
        headers: {},
        body: new Uint8Array([0xff, 0x00, 0x10]),
        delivery: {},
      },
      async () => {
        throw new Error('cannot read');
      },
    );
  });

  it('dead-letters list filters by reason and consumer, exit 1 when any', async () => {
    const all = await inSchema('dead-letters', 'list', '--json');
    expect(all.code).toBe(1);
    const letters = JSON.parse(all.stdout) as { id: string; reason: string }[];
    expect(letters).toHaveLength(3);
    const missing = await inSchema(
      'dead-letters',
      'list',
      '--reason',
      'MISSING_MESSAGE_ID',
      '--json',
    );
    expect(JSON.parse(missing.stdout)).toHaveLength(1);
    const other = await inSchema('dead-letters', 'list', '--consumer', 'nobody');
    expect(other.code).toBe(0);
    expect(other.stdout).toMatch(/no dead letters match/);
    const byId = await inSchema(
      'dead-letters',
      'list',
      '--ids',
      `${letters[0]!.id},${letters[2]!.id}`,
      '--json',
    );
    expect((JSON.parse(byId.stdout) as { id: string }[]).map((l) => l.id)).toEqual([
      letters[0]!.id,
      letters[2]!.id,
    ]);
    const future = await inSchema('dead-letters', 'list', '--since', '2999-01-01T00:00:00Z');
    expect(future.code).toBe(0);
    const past = await inSchema('dead-letters', 'list', '--until', '2000-01-01', '--json');
    expect(JSON.parse(past.stdout)).toEqual([]);
    // RFC 3339's space for the `T`.
    const spaced = await inSchema('dead-letters', 'list', '--since', '2000-01-01 00:00', '--json');
    expect(JSON.parse(spaced.stdout)).toHaveLength(letters.length);
  });

  it('dead-letters show prints headers, pretty JSON or hex body, and the error', async () => {
    const letters = JSON.parse((await inSchema('dead-letters', 'list', '--json')).stdout) as {
      id: string;
      messageId: string | null;
    }[];
    const json = letters.find((l) => l.messageId === 'm-1')!;
    const shown = await inSchema('dead-letters', 'show', json.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/content-type: application\/json/);
    expect(shown.stdout).toContain('{\n  "amount": 42\n}');
    expect(shown.stdout).toMatch(/message: .*card declined/);
    // Where it sat in its broker, in the text and in the JSON.
    expect(shown.stdout).toMatch(/position: +topic=payments partition=2 offset=42\n/);
    const shownJson = await inSchema('dead-letters', 'show', json.id, '--json');
    expect(
      (JSON.parse(shownJson.stdout) as { delivery: { position?: unknown } }).delivery.position,
    ).toEqual({ topic: 'payments', partition: 2, offset: '42' });
    const bytes = letters.find((l) => l.messageId === 'm-2')!;
    const hex = await inSchema('dead-letters', 'show', bytes.id);
    expect(hex.stdout).toMatch(/body \(3 bytes\)\nff0010/);
    expect(hex.stdout).toMatch(/position: +\(unknown\)\n/);
    const missing = await inSchema('dead-letters', 'show', '999999');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no dead letter 999999/);
  });
});

describe('bad arguments: clear message, exit 2, nothing changed', () => {
  it.each([
    [['dead-letters', 'list', '--reason', 'NOPE'], /--reason must be one of/],
    [['dead-letters', 'list', '--since', 'yesterday'], /--since must be an ISO 8601/],
    // Dates `new Date` would take, each runtime its own way: 2001-12-01 for `12`.
    [['dead-letters', 'list', '--since', '12'], /--since must be an ISO 8601/],
    [['dead-letters', 'list', '--until', 'Nov 26 2026'], /--until must be an ISO 8601/],
    [['dead-letters', 'list', '--ids', '1,x'], /dead letter ids are positive/],
    [['dead-letters', 'show', '-3'], /unknown option|positive integer/],
    [['dead-letters', 'show'], /missing required argument/],
  ])('%j', async (args, message) => {
    await expectRefused(db.store, args, message);
  });
});
