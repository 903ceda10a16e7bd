import { createInterface } from 'node:readline/promises';

/**
 * Asks `question [y/N]` on the terminal and resolves to whether the answer was yes. Only when
 * both stdin and stderr are terminals: off a terminal (a script, a pipe) it resolves to
 * `undefined` without asking, and the command must have been told `--yes`, so that it never
 * blocks on a prompt nobody sees.
 */
export async function confirm(question: string): Promise<boolean | undefined> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return undefined;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}
