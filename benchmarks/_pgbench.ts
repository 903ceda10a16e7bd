/**
 * pgbench as the limit of a benchmark's statements: the same statements, sent by PostgreSQL's
 * own C client as prepared statements over several connections, with nothing else in the way.
 * pgbench ships with PostgreSQL; where it is not installed the limit is left out.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { costMeter, median, type Cost } from './_support';

const run = promisify(execFile);

/** A pgbench script: one transaction of it, and the messages that transaction stands for. */
export interface PgbenchScript {
  /** Meta-commands (`\set`) and SQL commands, one a line. */
  readonly lines: readonly string[];
  /** Messages one transaction of the script handles. */
  readonly messagesPerTransaction: number;
}

/** What pgbench's statements cost per message: its client is not this process. */
export type PgbenchCost = Omit<Cost, 'nodeCpuUs'>;

/** One pgbench run: messages per second and what a message cost the server. */
export interface PgbenchRun {
  readonly perSec: number;
  /** Messages the run handled (transactions × messages per transaction). */
  readonly messages: number;
  readonly cost: PgbenchCost;
}

/**
 * `text` (with `$n` placeholders) as one line of a pgbench script, each `$n` written as the
 * pgbench variable `:names[n - 1]` (which `-M prepared` sends as a parameter again).
 */
export function pgbenchCommand(text: string, names: readonly string[]): string {
  return text.replace(/\s+/g, ' ').replace(/\$(\d+)/g, (_, n: string) => {
    const name = names[Number(n) - 1];
    if (name === undefined) throw new Error(`no pgbench variable for $${n}`);
    return `:${name}`;
  });
}

/** pgbench's version line, or null when it is not installed. */
export async function pgbenchVersion(): Promise<string | null> {
  try {
    return (await run('pgbench', ['--version'])).stdout.trim();
  } catch {
    return null;
  }
}

/**
 * Runs `script` with pgbench for `seconds` against `url` (a connection string, which pgbench
 * takes as its database name): `clients` connections on 2 threads, prepared statements, no
 * vacuum first; `variables` are set with `-D`. The rate is pgbench's transactions per second
 * (without connecting) times the messages per transaction; the PostgreSQL CPU is measured
 * around the whole run, and the statements per message are the script's SQL commands.
 */
export async function runPgbench(
  url: string,
  script: PgbenchScript,
  options: {
    readonly clients: number;
    readonly seconds: number;
    readonly variables: Readonly<Record<string, string | number>>;
  },
): Promise<PgbenchRun> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pgbench-'));
  const file = join(dir, 'script.sql');
  writeFileSync(file, `${script.lines.join('\n')}\n`);
  const args = ['-n', '-M', 'prepared', '-c', String(options.clients), '-j', '2'];
  args.push('-T', String(options.seconds), '-f', file);
  for (const [name, value] of Object.entries(options.variables))
    args.push('-D', `${name}=${value}`);
  args.push(url);
  try {
    const meter = costMeter();
    const { stdout } = await run('pgbench', args);
    // pgbench's connections end with it; the postmaster reaps their backends (and so takes in
    // their CPU, which the meter reads) a moment later.
    await new Promise((resolve) => setTimeout(resolve, 250));
    const processed = Number(/actually processed: (\d+)/.exec(stdout)?.[1]);
    const tps = Number(/^tps = ([\d.]+)/m.exec(stdout)?.[1]);
    if (!(processed > 0) || !(tps > 0)) throw new Error(`pgbench printed no rate:\n${stdout}`);
    const messages = processed * script.messagesPerTransaction;
    const sql = script.lines.filter((line) => !line.startsWith('\\')).length;
    return {
      perSec: tps * script.messagesPerTransaction,
      messages,
      cost: {
        postgresCpuUs: meter(messages).cost.postgresCpuUs,
        statements: Math.round((sql / script.messagesPerTransaction) * 1000) / 1000,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The median of each figure of `costs` (non-empty); PostgreSQL's is null if any is. */
export function medianPgbenchCost(costs: readonly PgbenchCost[]): PgbenchCost {
  const pg = costs.flatMap((c) => (c.postgresCpuUs === null ? [] : [c.postgresCpuUs]));
  return {
    postgresCpuUs: pg.length === costs.length ? Math.round(median(pg) * 10) / 10 : null,
    statements: median(costs.map((c) => c.statements)),
  };
}
