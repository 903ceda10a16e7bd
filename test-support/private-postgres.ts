/**
 * A private PostgreSQL cluster for tests that crash, restart or starve the server: started
 * from the machine's own binaries in a temporary folder, on a free port of its own, so the
 * machine's main server (127.0.0.1:5432) is never touched.
 *
 * ```ts
 * const reason = privatePostgresUnavailable();
 * const pg = await startPrivatePostgres({ sizeMb: 64 });
 * try {
 *   // pg.url: the `justonce` database; with sizeMb it lives on a small tmpfs
 *   await pg.restart({ mode: 'immediate' });
 *   await pg.disk!.fill();   // the tmpfs is full: writes that need a new page fail (53100)
 *   await pg.disk!.free();
 * } finally {
 *   await pg.dispose();
 * }
 * ```
 *
 * The binaries run as the `postgres` OS user (initdb refuses root). With `sizeMb`, a tmpfs
 * of that size is mounted and holds a tablespace; the `justonce` database is created in it,
 * so all its tables (and catalogs) are on the small disk while the WAL stays in the data
 * directory: a full disk then fails statements with `53100` instead of PANICking the server
 * on a WAL write.
 */
import { execFile, execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, statfs } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  clusterPsql,
  clusterUnavailable,
  dataDirOf,
  initCluster,
  postgresBinDir,
  startCluster,
  stopCluster,
  stopCommand,
  type ClusterSpec,
  type ServerSettings,
  type ShutdownMode,
} from '../services/postgres-cluster';

export { postgresBinDir, LOGICAL_SETTINGS, type ShutdownMode } from '../services/postgres-cluster';

const run = promisify(execFile);

/** Options of {@link startPrivatePostgres}. */
export interface PrivatePostgresOptions {
  /** An empty (or absent) folder for the cluster. Default: a new temporary folder. */
  readonly dataDir?: string;
  /** Puts the `justonce` database on a tmpfs of this many MB (see {@link PrivateDisk}). */
  readonly sizeMb?: number;
  /**
   * Server settings beyond the defaults, e.g. `LOGICAL_SETTINGS` for a server that logical
   * decoding can read (`wal_level = logical`).
   */
  readonly settings?: ServerSettings;
}

/** The small disk of a cluster started with `sizeMb`. */
export interface PrivateDisk {
  /** Where the tmpfs is mounted. */
  readonly dir: string;
  /** The tablespace on it, which holds the `justonce` database. */
  readonly tablespace: string;
  /** Takes every free byte of the tmpfs with a filler file; idempotent until {@link free}. */
  fill(): Promise<void>;
  /** Removes the filler file. */
  free(): Promise<void>;
  /** Free bytes on the tmpfs. */
  available(): Promise<number>;
}

/** A running private cluster. */
export interface PrivatePostgres {
  /** Connection string of the `justonce` database (user `postgres`, trust auth). */
  readonly url: string;
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** The cluster's data directory. */
  readonly dataDir: string;
  /** The small disk, when started with `sizeMb`. */
  readonly disk?: PrivateDisk;
  /** Stops and starts the server; resolves when it accepts connections again. */
  restart(options?: { readonly mode?: ShutdownMode }): Promise<void>;
  /** Stops the server (default `fast`). */
  stop(options?: { readonly mode?: ShutdownMode }): Promise<void>;
  /** Starts the server; resolves when it accepts connections. */
  start(): Promise<void>;
  /** Stops the server, unmounts the tmpfs and removes the folder. Safe to call twice. */
  dispose(): Promise<void>;
}

/**
 * Why a private cluster cannot be started here (no binaries, not root, no `postgres` user),
 * or `undefined` when it can. Tests skip with this message.
 */
export function privatePostgresUnavailable(): string | undefined {
  return clusterUnavailable();
}

/** A TCP port nobody listens on right now. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/**
 * Creates, starts and returns a private cluster. Skip the test first when
 * {@link privatePostgresUnavailable} gives a reason. On failure, whatever was set up is torn
 * down before the error is thrown.
 */
export async function startPrivatePostgres(
  options: PrivatePostgresOptions = {},
): Promise<PrivatePostgres> {
  const reason = privatePostgresUnavailable();
  if (reason !== undefined) throw new Error(`private PostgreSQL unavailable: ${reason}`);
  const bin = postgresBinDir()!;
  const root = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'jo-pg-')));
  const ownsRoot = options.dataDir === undefined;
  const tmpfsDir = options.sizeMb === undefined ? undefined : join(root, 'small');
  const filler = tmpfsDir === undefined ? undefined : join(tmpfsDir, 'filler');
  const spec: ClusterSpec = { bin, root, port: await freePort(), settings: options.settings };
  const dataDir = dataDirOf(spec);
  const port = spec.port;
  let mounted = false;
  let running = false;
  let disposed: Promise<void> | undefined;

  const start = async (): Promise<void> => {
    running = true;
    await startCluster(spec);
  };
  const stop = async ({ mode = 'fast' }: { readonly mode?: ShutdownMode } = {}): Promise<void> => {
    await stopCluster(spec, mode);
    running = false;
  };
  const psql = (sql: string): Promise<string> => clusterPsql(spec, sql);

  const dispose = (): Promise<void> => {
    disposed ??= (async () => {
      process.removeListener('exit', onExit);
      if (running) await stop({ mode: 'immediate' }).catch(() => undefined);
      if (mounted) {
        // A busy mount (a server that would not die) is detached lazily rather than left.
        await run('umount', [tmpfsDir!]).catch(() => run('umount', ['-l', tmpfsDir!]));
        mounted = false;
      }
      if (ownsRoot) await rm(root, { recursive: true, force: true });
      else await rm(dataDir, { recursive: true, force: true });
    })();
    return disposed;
  };
  // A worker that exits without running the test's cleanup must not leave a server behind.
  const onExit = (): void => {
    try {
      if (running) {
        const [command = '', ...args] = stopCommand(spec, 'immediate');
        execFileSync(command, args, { stdio: 'ignore' });
      }
      if (mounted) execFileSync('umount', ['-l', tmpfsDir!], { stdio: 'ignore' });
    } catch {
      // best effort at exit
    }
  };
  process.once('exit', onExit);

  try {
    await mkdir(root, { recursive: true });
    if (tmpfsDir !== undefined) {
      await mkdir(tmpfsDir, { recursive: true });
      await run('mount', ['-t', 'tmpfs', '-o', `size=${options.sizeMb}m`, 'tmpfs', tmpfsDir]);
      mounted = true;
      await mkdir(join(tmpfsDir, 'ts'));
    }
    await initCluster(spec);
    await start();
    if (tmpfsDir !== undefined) {
      await psql(`create tablespace small location '${join(tmpfsDir, 'ts')}'`);
      await psql('create database justonce tablespace small');
    } else {
      await psql('create database justonce');
    }
  } catch (error) {
    await dispose();
    throw error;
  }

  const disk: PrivateDisk | undefined =
    tmpfsDir === undefined
      ? undefined
      : {
          dir: tmpfsDir,
          tablespace: 'small',
          available: async () => {
            const s = await statfs(tmpfsDir);
            return s.bavail * s.bsize;
          },
          fill: async () => {
            const s = await statfs(tmpfsDir);
            const bytes = s.bavail * s.bsize;
            if (bytes > 0)
              await run('fallocate', ['-l', String(bytes), `${filler!}-${Date.now()}`]);
          },
          free: async () => {
            for (const name of readdirSync(tmpfsDir)) {
              if (name.startsWith('filler')) await rm(join(tmpfsDir, name), { force: true });
            }
          },
        };

  return {
    url: `postgres://postgres@127.0.0.1:${port}/justonce`,
    port,
    dataDir,
    disk,
    start,
    stop,
    restart: async ({ mode = 'fast' } = {}) => {
      await stop({ mode });
      await start();
    },
    dispose,
  };
}
