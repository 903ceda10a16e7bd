import { CRASH_POINTS } from '@justonce/core/testing';
import type { DemoResult } from './run';

const number = new Intl.NumberFormat('en-US');

/** The demo's figures as a boxed two-column table, followed by its checks. */
export function formatTable(result: DemoResult): string {
  const crashTotal = CRASH_POINTS.reduce((sum, point) => sum + result.crashes[point], 0);
  const sections: [string, string][][] = [
    [
      ['unique messages', number.format(result.uniqueMessages)],
      ['delivered', number.format(result.delivered)],
      ['duplicates suppressed', number.format(result.duplicatesSuppressed)],
      ['effects committed', number.format(result.effectsCommitted)],
      ['dead letters', number.format(result.deadLetters)],
      ['elapsed', `${(result.elapsedMs / 1000).toFixed(2)} s`],
    ],
    [
      ['injected: duplicates', number.format(result.duplicatesInjected)],
      ['injected: concurrent deliveries', number.format(result.concurrentInjected)],
      ['injected: crashes', number.format(crashTotal)],
      ...CRASH_POINTS.map((point): [string, string] => [
        `  at ${point}`,
        number.format(result.crashes[point]),
      ]),
      ['retries (failed deliveries)', number.format(result.retries)],
      ['store', result.database === 'pglite' ? 'PGlite' : 'PostgreSQL'],
      ['store startup (not in elapsed)', `${(result.setupMs / 1000).toFixed(2)} s`],
    ],
  ];
  const rows = sections.flat();
  const left = Math.max(...rows.map(([label]) => label.length));
  const right = Math.max(...rows.map(([, value]) => value.length));
  const rule = (l: string, m: string, r: string): string =>
    `${l}${'─'.repeat(left + 2)}${m}${'─'.repeat(right + 2)}${r}`;
  const lines = [rule('┌', '┬', '┐')];
  sections.forEach((section, i) => {
    if (i > 0) lines.push(rule('├', '┼', '┤'));
    for (const [label, value] of section) {
      lines.push(`│ ${label.padEnd(left)} │ ${value.padStart(right)} │`);
    }
  });
  lines.push(rule('└', '┴', '┘'));
  for (const check of result.checks) lines.push(`${check.ok ? '✓' : '✗'} ${check.name}`);
  lines.push(
    result.ok
      ? 'OK: every message took effect exactly once.'
      : 'FAILED: an invariant did not hold (see ✗ above).',
  );
  return lines.join('\n');
}
