import type { Logger } from '@justonce/core';

/** One line a {@link recordingLogger} kept, with when it was written. */
export interface LogLine {
  readonly at: number;
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * A logger that keeps every line at info and above in `lines`, with its time, for tests that
 * check when an app noticed a fault and when it recovered (debug lines are dropped: kafkajs
 * alone writes one per failed request).
 */
export function recordingLogger(lines: LogLine[]): Logger {
  const note =
    (level: LogLine['level']) =>
    (message: string, fields: Readonly<Record<string, unknown>> = {}) =>
      void lines.push({ at: Date.now(), level, message, fields });
  return { debug: () => undefined, info: note('info'), warn: note('warn'), error: note('error') };
}

/** What {@link firstLineAfter} looks for: a message prefix or pattern, and a level. */
export interface LineMatch {
  readonly message: string | RegExp;
  readonly level?: LogLine['level'];
}

/** The first line logged at or after `since` that matches (a string matches as a prefix). */
export function firstLineAfter(
  lines: readonly LogLine[],
  since: number,
  match: LineMatch,
): LogLine | undefined {
  return lines.find(
    (line) =>
      line.at >= since &&
      (match.level === undefined || line.level === match.level) &&
      (typeof match.message === 'string'
        ? line.message.startsWith(match.message)
        : match.message.test(line.message)),
  );
}

/** Milliseconds from `since` to the first matching line, or null when none came. */
export function msUntilLine(
  lines: readonly LogLine[],
  since: number,
  match: LineMatch,
): number | null {
  const line = firstLineAfter(lines, since, match);
  return line === undefined ? null : line.at - since;
}
