import type { StandardSchemaV1 } from '@standard-schema/spec';
import { storableDiagnostic, textOf } from '../common/text';

/**
 * One problem a schema found in a payload, as plain data: the validator's message and where
 * in the payload it is (`[]` for the payload itself). Both are storable text, cut to
 * {@link MAX_ISSUE_TEXT} characters.
 */
export interface PayloadIssue {
  /** The validator's message, e.g. `Invalid input: expected number, received string`. */
  readonly message: string;
  /** Keys from the payload's root to the offending value, e.g. `['items', 0, 'sku']`. */
  readonly path: readonly (string | number)[];
}

/** Issues kept per error; a payload can fail a schema in thousands of places. @internal */
export const MAX_ISSUES = 100;
/** Longest issue message or path key kept. @internal */
export const MAX_ISSUE_TEXT = 300;
/** Path segments kept per issue. */
const MAX_PATH = 32;
/** Issues named in an error's message; the rest are counted. */
const ISSUES_IN_MESSAGE = 10;

function cut(text: string): string {
  const storable = storableDiagnostic(text);
  return storable.length > MAX_ISSUE_TEXT ? `${storable.slice(0, MAX_ISSUE_TEXT)}…` : storable;
}

function segmentOf(segment: unknown): string | number {
  const key =
    typeof segment === 'object' && segment !== null ? (segment as { key?: unknown }).key : segment;
  if (typeof key === 'number' && Number.isFinite(key)) return key;
  if (typeof key === 'string') return cut(key);
  if (typeof key === 'symbol') return cut(key.description ?? 'symbol');
  return cut(textOf(key));
}

/**
 * The validator's issues as plain, storable data: at most {@link MAX_ISSUES}, each message and
 * key cut to {@link MAX_ISSUE_TEXT} characters. Tolerates validators that break the spec's
 * shapes (a missing message, a path that is not an array). @internal
 */
export function plainIssues(issues: readonly StandardSchemaV1.Issue[]): PayloadIssue[] {
  const list: unknown[] = Array.isArray(issues) ? issues.slice(0, MAX_ISSUES) : [];
  return list.map((issue) => {
    const given = (typeof issue === 'object' && issue !== null ? issue : {}) as {
      message?: unknown;
      path?: unknown;
    };
    const message = typeof given.message === 'string' ? given.message : textOf(given.message);
    const path = Array.isArray(given.path) ? given.path.slice(0, MAX_PATH).map(segmentOf) : [];
    return { message: cut(message), path };
  });
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A path as code would write it: `items[0].sku`, `["odd key"]`, or `(root)`. @internal */
export function formatPath(path: readonly (string | number)[]): string {
  if (path.length === 0) return '(root)';
  return path
    .map((segment, i) =>
      typeof segment === 'number'
        ? `[${segment}]`
        : IDENTIFIER.test(segment)
          ? `${i === 0 ? '' : '.'}${segment}`
          : `[${JSON.stringify(segment)}]`,
    )
    .join('');
}

/**
 * The issues in one line for an error message: the first ten as `path: message`, then how many
 * more there were (`total` counts those cut by {@link plainIssues} too). @internal
 */
export function describeIssues(issues: readonly PayloadIssue[], total = issues.length): string {
  if (issues.length === 0) return 'the schema reported a failure without issues';
  const named = issues
    .slice(0, ISSUES_IN_MESSAGE)
    .map((issue) =>
      issue.path.length === 0 ? issue.message : `${formatPath(issue.path)}: ${issue.message}`,
    );
  const more = total - named.length;
  return `${named.join('; ')}${more > 0 ? ` (and ${more} more issue${more === 1 ? '' : 's'})` : ''}`;
}
