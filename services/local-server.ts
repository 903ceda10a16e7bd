import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { SERVICES_DIR } from './paths';
import { runLogged } from './processes';

/**
 * A note, kept under `.services/<service>/started-by-justonce.json`, that we started a local
 * server (PostgreSQL or RabbitMQ) and how to stop it. `services:down` stops only servers with
 * such a note: a server that was running before us is left alone.
 */
export interface StartedNote {
  /** The command that stops the server again, as program and arguments. */
  stop: string[];
  /** When we started it (ISO time). */
  startedAt: string;
}

function noteFile(service: string): string {
  return path.join(SERVICES_DIR, service, 'started-by-justonce.json');
}

/** Records that we started the local server of `service`. */
export async function writeStartedNote(service: string, stop: string[]): Promise<void> {
  await fs.mkdir(path.dirname(noteFile(service)), { recursive: true });
  const note: StartedNote = { stop, startedAt: new Date().toISOString() };
  await fs.writeFile(noteFile(service), `${JSON.stringify(note, null, 2)}\n`);
}

/** The note of a server we started, if any. */
export async function readStartedNote(service: string): Promise<StartedNote | undefined> {
  if (!existsSync(noteFile(service))) return undefined;
  return JSON.parse(await fs.readFile(noteFile(service), 'utf8')) as StartedNote;
}

/** Forgets that we started the local server of `service` (it is gone already). */
export async function clearStartedNote(service: string): Promise<void> {
  await fs.rm(noteFile(service), { force: true });
}

/** Stops the local server of `service` if, and only if, we started it. */
export async function stopIfWeStarted(service: string, logFile: string): Promise<boolean> {
  const note = await readStartedNote(service);
  if (!note) return false;
  const [command, ...args] = note.stop;
  if (command) await runLogged(command, args, logFile, { timeoutMs: 120_000 });
  await fs.rm(noteFile(service), { force: true });
  return true;
}
