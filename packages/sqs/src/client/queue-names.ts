/** Longest SQS queue name, `.fifo` included. */
export const MAX_QUEUE_NAME_LENGTH = 80;

const NAME = /^[A-Za-z0-9_-]+(\.fifo)?$/;

/** True when `name` is a valid SQS queue name (1–80 of `A-Z a-z 0-9 _ -`, FIFO ending `.fifo`). */
export function isQueueName(name: string): boolean {
  return name.length >= 1 && name.length <= MAX_QUEUE_NAME_LENGTH && NAME.test(name);
}

/**
 * Queue names by URL (null for a value that is not a queue URL). A publisher asks about the
 * same few destinations on every call, and parsing a URL costs microseconds each time; the
 * cache is cleared when full so that values made up per message cannot grow it without end.
 */
const namesByUrl = new Map<string, string | null>();
const NAMES_BY_URL_LIMIT = 1_000;

/** The queue name at the end of a queue URL, or `undefined` when `value` is not a queue URL. */
export function queueNameOfUrl(value: string): string | undefined {
  const known = namesByUrl.get(value);
  if (known !== undefined) return known ?? undefined;
  const name = parseQueueNameOfUrl(value);
  if (namesByUrl.size >= NAMES_BY_URL_LIMIT) namesByUrl.clear();
  namesByUrl.set(value, name ?? null);
  return name;
}

function parseQueueNameOfUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const name = url.pathname.split('/').filter(Boolean).pop();
  return name !== undefined && isQueueName(name) ? name : undefined;
}

/** True when `value` is an http(s) URL whose last path segment is a queue name. */
export function isQueueUrl(value: string): boolean {
  return queueNameOfUrl(value) !== undefined;
}

/** True when a queue URL or name names a FIFO queue (its name ends in `.fifo`). */
export function isFifoQueue(urlOrName: string): boolean {
  return (queueNameOfUrl(urlOrName) ?? urlOrName).endsWith('.fifo');
}

/** The account and name in an SQS queue ARN (`arn:aws:sqs:region:account:name`). @internal */
export function parseQueueArn(arn: string): { account: string; name: string } | undefined {
  const parts = arn.split(':');
  if (parts.length !== 6 || parts[0] !== 'arn' || parts[2] !== 'sqs') return undefined;
  const [, , , , account, name] = parts as [string, string, string, string, string, string];
  return isQueueName(name) ? { account, name } : undefined;
}
