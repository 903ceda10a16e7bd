/**
 * `justonce operations list | show | release` on records reserved by the real operations API:
 * one in progress with a live lease, one whose lease ran out.
 */
import { createOperations } from '@justonce/core';
import { expectRefused, useSchema } from './cli-process';
import { operationRecords } from './seed';

const db = useSchema('cli_ops', (store) => operationRecords(store, 'charge-card'));
const { inSchema } = db;

describe('list and show', () => {
  it('lists records in progress; exit 1 because one is past its lease', async () => {
    const run = await inSchema('operations', 'list');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/charge-card\s*│\s*k-live\s*│\s*default\s*│\s*IN_PROGRESS/);
    expect(run.stdout).toMatch(/charge-card\s*│\s*k-stuck\s*│\s*default\s*│\s*PAST LEASE/);
  });

  it('--past-lease, --operation, --scope, --json', async () => {
    const past = await inSchema('operations', 'list', '--past-lease', '--json');
    expect(past.code).toBe(1);
    expect(JSON.parse(past.stdout)).toEqual([
      expect.objectContaining({ operation: 'charge-card', key: 'k-stuck', pastLease: true }),
    ]);
    const other = await inSchema('operations', 'list', '--operation', 'refund');
    expect(other.code).toBe(0);
    expect(other.stdout).toMatch(/no records in progress/);
    const scoped = await inSchema('operations', 'list', '--scope', 'tenant-9', '--json');
    expect(JSON.parse(scoped.stdout)).toEqual([]);
  });

  it('show prints one record; exit 1 when there is none', async () => {
    const run = await inSchema('operations', 'show', 'charge-card', 'k-stuck');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/operation charge-card, key k-stuck, scope default/);
    expect(run.stdout).toMatch(/status: {7}IN_PROGRESS \(past its lease\)/);
    const json = await inSchema('operations', 'show', 'charge-card', 'k-live', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'IN_PROGRESS', pastLease: false });
    const none = await inSchema('operations', 'show', 'charge-card', 'k-none', '--scope', 'x');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no record of operation charge-card, key k-none, scope x/);
  });
});

describe('release', () => {
  it('releases the record past its lease; the next call runs the effect again', async () => {
    const run = await inSchema('operations', 'release', 'charge-card', 'k-stuck');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/released operation charge-card, key k-stuck/);
    const shown = JSON.parse(
      (await inSchema('operations', 'show', 'charge-card', 'k-stuck', '--json')).stdout,
    );
    expect(shown).toMatchObject({
      status: 'FAILED_RETRIABLE',
      error: expect.objectContaining({ code: 'RELEASED' }),
    });
    const again = await createOperations({
      store: db.store,
      operation: 'charge-card',
      leaseMs: 1000,
    }).reserve('k-stuck', { a: 2 });
    expect(again.kind).toBe('acquired');
  });

  it('refuses a record whose lease still runs unless --force; exit 1, nothing changed', async () => {
    await expectRefused(
      db.store,
      ['operations', 'release', 'charge-card', 'k-live'],
      /nothing released: its lease still runs \(pass --force/,
      1,
    );
    const forced = await inSchema(
      'operations',
      'release',
      'charge-card',
      'k-live',
      '--force',
      '--json',
    );
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toEqual({
      operation: 'charge-card',
      key: 'k-live',
      scope: 'default',
      released: true,
    });
  });

  it('nothing to release for an unknown record: exit 1', async () => {
    const run = await inSchema('operations', 'release', 'charge-card', 'k-none');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/nothing released: there is no such record/);
  });
});

describe('bad arguments: clear message, exit 2, nothing changed', () => {
  it.each([
    [['operations', 'list', '--limit', '5000'], /--limit must be an integer from 1 to 1000/],
    [['operations', 'list', '--operation', ''], /--operation must not be empty/],
    [['operations', 'show', 'charge-card'], /missing required argument 'key'/],
    [
      ['operations', 'release', 'charge-card', 'k-live', '--scope', ''],
      /--scope must not be empty/,
    ],
    [['operations', 'release', '', 'k'], /must not be empty/],
    [['operations', 'release', 'charge-card', 'k-live', '--forse'], /unknown option '--forse'/],
  ])('%j', async (args, message) => {
    await expectRefused(db.store, args, message);
  });
});
