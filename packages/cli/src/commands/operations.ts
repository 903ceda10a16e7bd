import type {
  AdminOperationRecord as OperationRecord,
  AdminOperationRef as OperationRef,
} from '@justonce/core';
import type { Command } from 'commander';
import { parseInteger, parseName } from '../arguments';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { EXIT_FAILED } from '../exit-codes';
import { printJson, renderValue, table, time, say, complain } from '../format';
import { UsageError } from '../usage-error';

function ref(operation: string, key: string, scope: string | undefined): OperationRef {
  const name = parseName(operation, 'the operation');
  if (name === undefined || key === '')
    throw new UsageError('the operation and the key must not be empty');
  const s = parseName(scope, '--scope');
  return { operation: name, key, ...(s === undefined ? {} : { scope: s }) };
}

const state = (r: OperationRecord): string => (r.pastLease ? 'PAST LEASE' : r.status);

function showRecord(r: OperationRecord): string {
  return [
    `operation ${r.operation}, key ${r.key}, scope ${r.scope}`,
    `  status:       ${r.status}${r.pastLease ? ' (past its lease)' : ''}`,
    `  owner:        ${r.ownerId ?? '-'}`,
    `  lease until:  ${time(r.leaseUntil)}`,
    `  attempts:     ${r.attempts}`,
    `  created at:   ${time(r.createdAt)}`,
    `  updated at:   ${time(r.updatedAt)}`,
    `  expires at:   ${time(r.expiresAt)}`,
    '',
    'response',
    renderValue(r.response),
    '',
    'error',
    renderValue(r.error),
  ].join('\n');
}

/** `justonce operations list | show | release`. */
export function operationsCommand(program: Command, globals: () => GlobalOptions): void {
  const group = program
    .command('operations')
    .description(
      "idempotent operations' records in progress: list, show (an inbox consumer's too), release",
    );
  listRecords(group, globals);
  showRecordCommand(group, globals);
  releaseRecord(group, globals);
}

function listRecords(group: Command, globals: () => GlobalOptions): void {
  group
    .command('list')
    .description(
      "operations' records in progress (inbox records never are); exit 1 when one is past its lease",
    )
    .option('--past-lease', 'only those whose lease ran out (the owner died or hangs)')
    .option('--operation <name>', 'only this operation')
    .option('--scope <scope>', 'only this scope')
    .option('--limit <n>', 'most records to list, 1-1000 (default 100)')
    .option('--json', 'print JSON')
    .action(
      async (o: {
        pastLease?: boolean;
        operation?: string;
        scope?: string;
        limit?: string;
        json?: boolean;
      }) => {
        checkGlobalOptions(globals());
        const operation = parseName(o.operation, '--operation');
        const scope = parseName(o.scope, '--scope');
        const limit = parseInteger(o.limit, '--limit', { min: 1, max: 1000, fallback: 100 });
        await withAdmin(globals(), async (admin) => {
          const records = await admin.operations.list({
            state: o.pastLease ? 'past-lease' : 'in-progress',
            ...(operation === undefined ? {} : { operation }),
            ...(scope === undefined ? {} : { scope }),
            limit,
          });
          if (o.json) printJson(records);
          else if (records.length === 0)
            say(o.pastLease ? 'no records past their lease' : 'no records in progress');
          else
            say(
              table(
                [
                  'operation',
                  'key',
                  'scope',
                  'state',
                  'owner',
                  'lease until',
                  'attempts',
                  'created at',
                ],
                records.map((r) => [
                  r.operation,
                  r.key,
                  r.scope,
                  state(r),
                  r.ownerId ?? '-',
                  time(r.leaseUntil),
                  r.attempts,
                  time(r.createdAt),
                ]),
              ),
            );
          if (records.some((r) => r.pastLease)) process.exitCode = EXIT_FAILED;
        });
      },
    );
}

function showRecordCommand(group: Command, globals: () => GlobalOptions): void {
  group
    .command('show')
    .description(
      'one record: status, owner, lease, attempts, stored response and error; exit 1 when there is none',
    )
    .argument('<operation>', 'the operation (or inbox consumer) name')
    .argument('<key>', 'the idempotency key (or message id)')
    .option('--scope <scope>', "the record's scope (default: default)")
    .option('--json', 'print JSON')
    .action(async (operation: string, key: string, o: { scope?: string; json?: boolean }) => {
      checkGlobalOptions(globals());
      const r = ref(operation, key, o.scope);
      await withAdmin(globals(), async (admin) => {
        const record = await admin.operations.get(r);
        if (record === undefined) {
          complain(
            `no record of operation ${r.operation}, key ${r.key}, scope ${r.scope ?? 'default'}`,
          );
          process.exitCode = EXIT_FAILED;
        } else if (o.json) printJson(record);
        else say(showRecord(record));
      });
    });
}

function releaseRecord(group: Command, globals: () => GlobalOptions): void {
  group
    .command('release')
    .description(
      'release a record stuck in progress past its lease, so the next call or redelivery runs ' +
        'the effect again; exit 1 when there was nothing to release',
    )
    .argument('<operation>', 'the operation (or inbox consumer) name')
    .argument('<key>', 'the idempotency key (or message id)')
    .option('--scope <scope>', "the record's scope (default: default)")
    .option(
      '--force',
      "release it even though its lease still runs (its owner's completion is then refused)",
    )
    .option('--json', 'print JSON')
    .action(
      async (
        operation: string,
        key: string,
        o: { scope?: string; force?: boolean; json?: boolean },
      ) => {
        checkGlobalOptions(globals());
        const r = ref(operation, key, o.scope);
        await withAdmin(globals(), async (admin) => {
          const before = await admin.operations.get(r);
          const released =
            before !== undefined &&
            (await admin.operations.release(r, { force: o.force === true }));
          const why =
            before === undefined
              ? 'there is no such record'
              : before.status !== 'IN_PROGRESS'
                ? `it is ${before.status}, not in progress`
                : 'its lease still runs (pass --force to release it anyway)';
          if (o.json)
            printJson({
              ...r,
              scope: r.scope ?? 'default',
              released,
              ...(released ? {} : { reason: why }),
            });
          else if (released)
            say(`released operation ${r.operation}, key ${r.key}: the next call runs it again`);
          else complain(`nothing released: ${why}`);
          if (!released) process.exitCode = EXIT_FAILED;
        });
      },
    );
}
