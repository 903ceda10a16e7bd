import { promises as fs } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SERVICES_DIR, shown } from './paths';
import { isAlive } from './processes';

/**
 * Runs `fn` while holding the lock file `.services/<name>.lock`, so that concurrent
 * `pnpm test` or `pnpm services:up` runs of this checkout never start the same service twice.
 *
 * The lock is a file created exclusively and holding the owner's pid. A lock whose owner is
 * no longer alive (a run killed while starting a service) is taken over.
 */
export async function withLock<T>(
  name: string,
  fn: () => Promise<T>,
  timeoutMs = 10 * 60_000,
): Promise<T> {
  const file = path.join(SERVICES_DIR, `${name}.lock`);
  await fs.mkdir(SERVICES_DIR, { recursive: true });
  const token = `${process.pid}\n`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fs.writeFile(file, token, { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = await fs.readFile(file, 'utf8').catch(() => '');
    const pid = Number.parseInt(holder, 10);
    if (holder !== '' && !(pid > 0 && isAlive(pid))) {
      // The holder died: remove its lock, unless someone replaced it meanwhile.
      const again = await fs.readFile(file, 'utf8').catch(() => '');
      if (again === holder) await fs.rm(file, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `Waited ${Math.round(timeoutMs / 1000)} s for ${shown(file)}, held by process ${pid}. ` +
          'If no other `pnpm test` or `pnpm services:up` is running, delete that file.',
      );
    }
    await sleep(200);
  }
  try {
    return await fn();
  } finally {
    const current = await fs.readFile(file, 'utf8').catch(() => '');
    if (current === token) await fs.rm(file, { force: true });
  }
}
