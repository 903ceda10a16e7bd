import { createDeadLetters, type DeadLetter, type DeadLetterReason } from '@justonce/core';
import type { Command } from 'commander';
import { checkGlobalOptions, withStore, type GlobalOptions } from '../connect';
import { printJson, table } from '../format';
import { UsageError } from '../usage-error';

const LETTER_ID = /^[1-9][0-9]{0,18}$/;
const REASONS: readonly DeadLetterReason[] = [
  'MISSING_MESSAGE_ID',
  'INVALID_MESSAGE_ID',
  'INVALID_SCOPE',
  'INVALID_HEADERS',
  'INVALID_BODY',
  'UNDECODABLE_BODY',
  'PAYLOAD_CONFLICT',
  'MAX_ATTEMPTS',
  'NON_RETRIABLE',
  'INVALID_PAYLOAD',
  'UNKNOWN_MESSAGE_TYPE',
];

/** The filters of `dead-letters list`, checked before the database is opened. */
interface ListFilters {
  readonly consumer?: string;
  readonly reason?: DeadLetterReason;
  readonly since?: Date;
  readonly until?: Date;
  readonly ids?: readonly string[];
  readonly limit: number;
  readonly includeRequeued: boolean;
}

function parseDate(value: string, flag: string): Date {
  const date = new Date(value);
  if (value.trim() === '' || Number.isNaN(date.getTime())) {
    throw new UsageError(`${flag} must be an ISO 8601 date or time, got ${JSON.stringify(value)}`);
  }
  return date;
}

function parseFilters(o: Record<string, string | boolean | undefined>): ListFilters {
  const reason = o['reason'] as string | undefined;
  if (reason !== undefined && !REASONS.includes(reason as DeadLetterReason)) {
    throw new UsageError(
      `--reason must be one of ${REASONS.join(', ')}; got ${JSON.stringify(reason)}`,
    );
  }
  const ids =
    o['id'] === undefined
      ? undefined
      : String(o['id'])
          .split(',')
          .map((s) => s.trim());
  for (const id of ids ?? []) {
    if (!LETTER_ID.test(id))
      throw new UsageError(
        `--id takes dead letter ids (positive integers), got ${JSON.stringify(id)}`,
      );
  }
  const limit = o['limit'] === undefined ? 100 : Number(o['limit']);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) {
    throw new UsageError(
      `--limit must be an integer from 1 to 100000, got ${JSON.stringify(o['limit'])}`,
    );
  }
  const since = o['since'] === undefined ? undefined : parseDate(String(o['since']), '--since');
  const until = o['until'] === undefined ? undefined : parseDate(String(o['until']), '--until');
  if (since && until && since > until) throw new UsageError('--since is after --until');
  return {
    ...(o['consumer'] === undefined ? {} : { consumer: String(o['consumer']) }),
    ...(reason === undefined ? {} : { reason: reason as DeadLetterReason }),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    ...(ids ? { ids } : {}),
    limit,
    includeRequeued: o['requeued'] === true,
  };
}

function matches(letter: DeadLetter, f: ListFilters): boolean {
  if (f.consumer !== undefined && letter.consumer !== f.consumer) return false;
  if (f.reason !== undefined && letter.reason !== f.reason) return false;
  if (f.since && letter.deadAt < f.since) return false;
  if (f.until && letter.deadAt > f.until) return false;
  if (!f.includeRequeued && letter.requeuedAt !== null) return false;
  return true;
}

/**
 * The letters matching `f`, in id order, at most `f.limit`. Consumer and reason are
 * filtered by `DeadLetters.list`; the time range is filtered here while paging, because the
 * core API has no time filter (a long history is read page by page to find the range).
 */
async function findLetters(
  deadLetters: ReturnType<typeof createDeadLetters>,
  f: ListFilters,
): Promise<DeadLetter[]> {
  if (f.ids) {
    const found = await Promise.all(f.ids.map((id) => deadLetters.get(id)));
    return found.filter((l): l is DeadLetter => l !== undefined && matches(l, f)).slice(0, f.limit);
  }
  const out: DeadLetter[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await deadLetters.list({
      ...(f.consumer === undefined ? {} : { consumer: f.consumer }),
      ...(f.reason === undefined ? {} : { reason: f.reason }),
      includeRequeued: f.includeRequeued,
      limit: 1000,
      ...(after === undefined ? {} : { after }),
    });
    for (const letter of page) {
      if (f.until && letter.deadAt > f.until) return out; // ids grow with time
      if (matches(letter, f)) out.push(letter);
      if (out.length >= f.limit) return out;
    }
    if (page.length < 1000) return out;
    after = page[page.length - 1]!.id;
  }
}

function letterJson(l: DeadLetter): Record<string, unknown> {
  const isText = typeof l.body === 'string';
  return {
    ...l,
    body: isText ? l.body : Buffer.from(l.body).toString('base64'),
    bodyEncoding: isText ? 'text' : 'base64',
  };
}

/** Pretty JSON when the body parses as JSON, the text when it is valid UTF-8 text, hex otherwise. */
export function renderBody(body: Uint8Array | string): string {
  const text = typeof body === 'string' ? body : decodeUtf8(body);
  if (text !== undefined) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      if (typeof body === 'string') return text;
    }
  }
  const hex = Buffer.from(body as Uint8Array).toString('hex');
  return (hex.match(/.{1,64}/g) ?? ['']).join('\n');
}

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** `justonce dead-letters list | show ID`. */
export function deadLettersCommand(program: Command, globals: () => GlobalOptions): void {
  const group = program
    .command('dead-letters')
    .description('inspect what the inbox could not handle');

  group
    .command('list')
    .description('waiting dead letters in id order (oldest first); exit 1 when any are listed')
    .option('--consumer <name>', 'only this consumer')
    .option('--reason <reason>', `only this reason (${REASONS.join(', ')})`)
    .option('--since <time>', 'dead-lettered at or after this ISO 8601 time')
    .option('--until <time>', 'dead-lettered at or before this ISO 8601 time')
    .option('--id <ids>', 'only these ids, comma-separated')
    .option('--requeued', 'include letters already requeued')
    .option('--limit <n>', 'most letters to list (default 100)')
    .option('--json', 'print JSON')
    .action(async (options: Record<string, string | boolean | undefined>) => {
      checkGlobalOptions(globals());
      const filters = parseFilters(options);
      await withStore(globals(), async (store) => {
        const letters = await findLetters(createDeadLetters(store), filters);
        if (options['json']) printJson(letters.map(letterJson));
        else if (letters.length === 0) console.log('no dead letters match');
        else
          console.log(
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
        if (letters.length > 0) process.exitCode = 1;
      });
    });

  group
    .command('show')
    .description('one dead letter: its facts, headers, body and error; exit 1 when there is none')
    .argument('<id>', 'the dead letter id')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      checkGlobalOptions(globals());
      if (!LETTER_ID.test(id))
        throw new UsageError(`a dead letter id is a positive integer, got ${JSON.stringify(id)}`);
      await withStore(globals(), async (store) => {
        const letter = await createDeadLetters(store).get(id);
        if (letter === undefined) {
          console.error(`no dead letter ${id} in schema ${store.schema}`);
          process.exitCode = 1;
          return;
        }
        if (options.json) {
          printJson(letterJson(letter));
          return;
        }
        const lines = [
          `dead letter ${letter.id}`,
          `  consumer:     ${letter.consumer}`,
          `  scope:        ${letter.scope}`,
          `  message id:   ${letter.messageId ?? '(none)'}`,
          `  key:          ${letter.key ?? '(none)'}`,
          `  reason:       ${letter.reason}`,
          `  attempts:     ${letter.attempts}`,
          `  first try:    ${letter.firstAttemptAt?.toISOString() ?? '-'}`,
          `  dead at:      ${letter.deadAt.toISOString()}`,
          `  requeued at:  ${letter.requeuedAt?.toISOString() ?? '-'}`,
          '',
          'headers',
          ...Object.entries(letter.headers).map(([k, v]) => `  ${k}: ${v}`),
          ...(Object.keys(letter.headers).length === 0 ? ['  (none)'] : []),
          '',
          `body (${typeof letter.body === 'string' ? 'text' : `${letter.body.byteLength} bytes`})`,
          renderBody(letter.body),
          '',
          'error',
          `  code:    ${letter.errorCode ?? '-'}`,
          `  message: ${letter.errorMessage ?? '-'}`,
        ];
        console.log(lines.join('\n'));
      });
    });
}
