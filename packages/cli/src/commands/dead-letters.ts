import type { DeadLetter, DeliveryPosition } from '@justonce/core';
import type { Command } from 'commander';
import { ROW_ID } from '../arguments';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { EXIT_FAILED } from '../exit-codes';
import { bodyLabel, printJson, renderBody, table, time, say, complain } from '../format';
import { UsageError } from '../usage-error';
import { deadLetterActions } from './dead-letter-actions';
import { letterFilterOptions, parseLetterFilters, type LetterFlags } from './dead-letter-selection';

/** A letter as `--json` prints it: bytes as base64, said so. */
export function letterJson(l: DeadLetter): Record<string, unknown> {
  const isText = typeof l.body === 'string';
  return {
    ...l,
    body: isText ? l.body : Buffer.from(l.body).toString('base64'),
    bodyEncoding: isText ? 'text' : 'base64',
  };
}

/** The position's fields in the order `show` prints them. */
const POSITION_FIELDS = [
  'topic',
  'queue',
  'partition',
  'offset',
  'brokerMessageId',
  'exchange',
  'routingKey',
] as const satisfies ReadonlyArray<keyof DeliveryPosition>;

/**
 * A broker position as `name=value` pairs in {@link POSITION_FIELDS} order (`topic=orders
 * partition=2 offset=42`): the store's JSON gives them back in an order of its own.
 */
function positionText(position: DeliveryPosition = {}): string {
  const pairs = POSITION_FIELDS.flatMap((name) =>
    position[name] === undefined ? [] : [`${name}=${String(position[name])}`],
  );
  return pairs.length === 0 ? '(unknown)' : pairs.join(' ');
}

function showLetter(letter: DeadLetter): string {
  return [
    `dead letter ${letter.id}`,
    `  consumer:     ${letter.consumer}`,
    `  scope:        ${letter.scope}`,
    `  message id:   ${letter.messageId ?? '(none)'}`,
    `  key:          ${letter.key ?? '(none)'}`,
    `  source:       ${letter.delivery.source ?? '(unknown)'}`,
    `  position:     ${positionText(letter.delivery.position)}`,
    `  reason:       ${letter.reason}`,
    `  attempts:     ${letter.attempts}`,
    `  first try:    ${time(letter.firstAttemptAt)}`,
    `  dead at:      ${time(letter.deadAt)}`,
    `  requeued at:  ${time(letter.requeuedAt)}`,
    '',
    'headers',
    ...Object.entries(letter.headers).map(([k, v]) => `  ${k}: ${v}`),
    ...(Object.keys(letter.headers).length === 0 ? ['  (none)'] : []),
    '',
    `body (${bodyLabel(letter.body)})`,
    renderBody(letter.body),
    '',
    'error',
    `  code:    ${letter.errorCode ?? '-'}`,
    `  message: ${letter.errorMessage ?? '-'}`,
  ].join('\n');
}

/** `justonce dead-letters list | show ID | requeue | delete`. */
export function deadLettersCommand(program: Command, globals: () => GlobalOptions): void {
  const group = program
    .command('dead-letters')
    .description('inspect, requeue and delete what the inbox could not handle');

  letterFilterOptions(
    group
      .command('list')
      .description('waiting dead letters in id order (oldest first); exit 1 when any are listed'),
  )
    .option('--limit <n>', 'most letters to list (default 100)')
    .option('--json', 'print JSON')
    .action(async (options: LetterFlags & { json?: boolean }) => {
      checkGlobalOptions(globals());
      const filters = parseLetterFilters(options, [], 100);
      await withAdmin(globals(), async (admin) => {
        const letters = await admin.deadLetters.select(filters).toArray();
        if (options.json) printJson(letters.map(letterJson));
        else if (letters.length === 0) say('no dead letters match');
        else
          say(
            table(
              ['id', 'consumer', 'reason', 'message id', 'attempts', 'dead at', 'error'],
              letters.map((l) => [
                l.id,
                l.consumer,
                l.reason,
                l.messageId ?? '(none)',
                l.attempts,
                l.deadAt.toISOString(),
                (l.errorMessage ?? '').slice(0, 60),
              ]),
            ),
          );
        if (letters.length > 0) process.exitCode = EXIT_FAILED;
      });
    });

  group
    .command('show')
    .description('one dead letter: its facts, headers, body and error; exit 1 when there is none')
    .argument('<id>', 'the dead letter id')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      checkGlobalOptions(globals());
      if (!ROW_ID.test(id))
        throw new UsageError(`a dead letter id is a positive integer, got ${JSON.stringify(id)}`);
      await withAdmin(globals(), async (admin, store) => {
        const letter = await admin.deadLetters.get(id);
        if (letter === undefined) {
          complain(`no dead letter ${id} in schema ${store.schema}`);
          process.exitCode = EXIT_FAILED;
        } else if (options.json) printJson(letterJson(letter));
        else say(showLetter(letter));
      });
    });

  deadLetterActions(group, globals);
}
