import {
  createAdmin,
  ReplicationSlotActiveError,
  ReplicationSlotNotFoundError,
  type ReplicationSlotStatus,
} from '@justonce/core/admin';
import type { Command } from 'commander';
import { confirm } from '../confirm';
import { checkGlobalOptions, withStore, type GlobalOptions } from '../connect';
import { EXIT_FAILED } from '../exit-codes';
import { age, bytes, complain, printJson, say, table } from '../format';
import { UsageError } from '../usage-error';

/** The columns of a slot in `status` and `slots list`. */
export const SLOT_HEAD = ['slot', 'active', 'lag', 'lag time', 'retained WAL', 'wal status'];

/** One slot as a row of {@link SLOT_HEAD}. */
export function slotRow(slot: ReplicationSlotStatus): (string | number)[] {
  const active = slot.active
    ? `yes (pid ${slot.activePid ?? '?'})`
    : slot.inactiveSince === null
      ? 'no'
      : `no, since ${slot.inactiveSince.toISOString()}`;
  return [
    slot.name,
    active,
    bytes(slot.lagBytes),
    age(slot.lagSeconds),
    bytes(slot.retainedBytes),
    slot.walStatus ?? '-',
  ];
}

/** What the prompt says of the slot about to be dropped. */
function describe(slot: ReplicationSlotStatus): string {
  return (
    `${slot.plugin}, inactive, ${bytes(slot.lagBytes)} not confirmed, ` +
    `keeps ${bytes(slot.retainedBytes)} of WAL, wal status ${slot.walStatus ?? 'unknown'}`
  );
}

/** Checks a slot name on the command line (core checks it again). */
function checkName(name: string): void {
  if (!/^[a-z0-9_]{1,63}$/.test(name)) {
    throw new UsageError(
      `a replication slot name is 1-63 characters of a-z, 0-9 and _, got ${JSON.stringify(name)}`,
    );
  }
}

/**
 * Asks before dropping `slot`, unless `--yes`. Resolves to whether to go on; off a terminal
 * without `--yes` it refuses (exit 2, nothing changed).
 */
async function confirmDrop(slot: ReplicationSlotStatus, yes: boolean): Promise<boolean> {
  if (yes) return true;
  const question =
    `Drop replication slot ${slot.name} (${describe(slot)})? ` +
    'PostgreSQL can then remove that WAL; a log relay on this slot must be seeded anew.';
  const answer = await confirm(question);
  if (answer === undefined) {
    throw new UsageError(
      `dropping replication slot ${slot.name} needs --yes when not run on a terminal; nothing changed`,
    );
  }
  return answer;
}

/** `justonce slots list | drop`. */
export function slotsCommand(program: Command, globals: () => GlobalOptions): void {
  const group = program
    .command('slots')
    .description(
      "the database's logical replication slots (a log relay's): their lag, and dropping an abandoned one",
    );

  group
    .command('list')
    .description('logical replication slots of the database, with their lag and wal status')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      checkGlobalOptions(globals());
      await withStore(globals(), async (store) => {
        const slots = await createAdmin(store).replicationSlots();
        if (options.json) printJson(slots);
        else if (slots.length === 0) say('no logical replication slots in this database');
        else say(table(SLOT_HEAD, slots.map(slotRow)));
      });
    });

  group
    .command('drop')
    .description(
      'drop an abandoned logical replication slot so PostgreSQL can remove the WAL it keeps; ' +
        'asks first (--yes off a terminal); refuses a slot being read',
    )
    .argument('<name>', 'the slot name')
    .option('-y, --yes', 'do not ask first')
    .option('--json', 'print JSON')
    .action(async (name: string, options: { yes?: boolean; json?: boolean }) => {
      checkGlobalOptions(globals());
      checkName(name);
      await withStore(globals(), async (store) => {
        const admin = createAdmin(store);
        const slot = (await admin.replicationSlots()).find((s) => s.name === name);
        if (slot === undefined) throw new ReplicationSlotNotFoundError(name, null);
        if (slot.active) throw new ReplicationSlotActiveError(name, slot.activePid);
        if (!(await confirmDrop(slot, options.yes === true))) {
          complain('nothing changed');
          process.exitCode = EXIT_FAILED;
          return;
        }
        await admin.dropReplicationSlot(name);
        if (options.json) printJson({ dropped: name });
        else say(`dropped replication slot ${name}`);
      });
    });
}
