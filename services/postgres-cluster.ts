/**
 * A PostgreSQL cluster of our own, from the machine's binaries: `initdb` in a folder, started
 * and stopped with `pg_ctl` on a port of its own, as the `postgres` OS user (initdb refuses
 * root). The logical-replication service and the tests' private servers both run on it; the
 * machine's main server is never touched.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** How a server is shut down: `immediate` is a crash (recovery on start), `fast` is clean. */
export type ShutdownMode = 'immediate' | 'fast';

/** Server settings, as `-c name=value` on the command line (values quoted for `pg_ctl -o`). */
export type ServerSettings = Readonly<Record<string, string | number | boolean>>;

/** The settings every cluster of ours runs with (a test's or the service's own come after). */
export const CLUSTER_DEFAULTS: ServerSettings = {
  // fsync off for speed: an `immediate` shutdown kills processes, not the OS, so the page
  // cache still holds every committed write; synchronous_commit stays on.
  fsync: 'off',
  synchronous_commit: 'on',
  full_page_writes: 'off',
  max_connections: 60,
  shared_buffers: '32MB',
};

/** What logical decoding needs: the relay's slot, Debezium's and a standby's walsenders. */
export const LOGICAL_SETTINGS: ServerSettings = {
  wal_level: 'logical',
  max_replication_slots: 32,
  max_wal_senders: 32,
};

/** The folder holding `initdb`, `pg_ctl` and `postgres`, highest major version first. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  return versions
    .map((v) => join(root, v, 'bin'))
    .find((bin) => ['initdb', 'pg_ctl', 'postgres'].every((b) => existsSync(join(bin, b))));
}

/**
 * Why a cluster of our own cannot be started here (no binaries, not root, no `postgres`
 * user), or `undefined` when it can.
 */
export function clusterUnavailable(): string | undefined {
  if (postgresBinDir() === undefined) {
    return 'no PostgreSQL binaries under /usr/lib/postgresql/*/bin (initdb, pg_ctl, postgres)';
  }
  if (process.getuid?.() !== 0) return 'not root: cannot run the server as the `postgres` user';
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
  } catch {
    return 'no `postgres` OS user to run the server as';
  }
  return undefined;
}

/** Runs a PostgreSQL binary as the `postgres` user; its output is in the error when it fails. */
export async function asPostgres(bin: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run('runuser', ['-u', 'postgres', '--', bin, ...args], {
      timeout: 90_000,
    });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}

/** Where one cluster lives and how it listens. */
export interface ClusterSpec {
  /** The binaries (see {@link postgresBinDir}). */
  readonly bin: string;
  /** Owned by `postgres`; holds `data/`, the socket and `server.log`. */
  readonly root: string;
  readonly port: number;
  /** After {@link CLUSTER_DEFAULTS}. */
  readonly settings?: ServerSettings;
}

/** The cluster's data directory. */
export const dataDirOf = (spec: ClusterSpec): string => join(spec.root, 'data');

/** Makes `root` the `postgres` user's and runs `initdb` in `root/data` (trust, UTF8, C). */
export async function initCluster(spec: ClusterSpec): Promise<void> {
  await run('chown', ['-R', 'postgres:postgres', spec.root]);
  await asPostgres(join(spec.bin, 'initdb'), [
    '--no-sync',
    '-A',
    'trust',
    '-U',
    'postgres',
    '-E',
    'UTF8',
    '--locale=C',
    '-D',
    dataDirOf(spec),
  ]);
}

function serverOptions(spec: ClusterSpec): string {
  const settings = { ...CLUSTER_DEFAULTS, ...spec.settings };
  return [
    `-p ${spec.port}`,
    "-c listen_addresses='127.0.0.1'",
    `-k ${spec.root}`,
    ...Object.entries(settings).map(([name, value]) => `-c ${name}='${String(value)}'`),
  ].join(' ');
}

/** Starts the server; resolves when it accepts connections. */
export async function startCluster(spec: ClusterSpec): Promise<void> {
  await asPostgres(join(spec.bin, 'pg_ctl'), [
    'start',
    '-w',
    '-t',
    '60',
    '-D',
    dataDirOf(spec),
    '-l',
    join(spec.root, 'server.log'),
    '-o',
    serverOptions(spec),
  ]);
}

/** The `pg_ctl stop` command line, as program and arguments (run as `postgres`). */
export function stopCommand(spec: ClusterSpec, mode: ShutdownMode = 'fast'): string[] {
  return [
    'runuser',
    '-u',
    'postgres',
    '--',
    join(spec.bin, 'pg_ctl'),
    'stop',
    '-w',
    '-t',
    '60',
    '-m',
    mode,
    '-D',
    dataDirOf(spec),
  ];
}

/** Stops the server (default `fast`). */
export async function stopCluster(spec: ClusterSpec, mode: ShutdownMode = 'fast'): Promise<void> {
  const [, , , , bin = '', ...args] = stopCommand(spec, mode);
  await asPostgres(bin, args);
}

/** Runs SQL with `psql` on the cluster (as `postgres`), in `db`; returns its unaligned output. */
export function clusterPsql(spec: ClusterSpec, sql: string, db = 'postgres'): Promise<string> {
  return asPostgres(join(spec.bin, 'psql'), [
    '-h',
    '127.0.0.1',
    '-p',
    String(spec.port),
    '-d',
    db,
    '-v',
    'ON_ERROR_STOP=1',
    '-qAtc',
    sql,
  ]);
}
