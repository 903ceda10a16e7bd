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
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, statfs } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** How the server is shut down: `immediate` is a crash (recovery on start), `fast` is clean. */
export type ShutdownMode = 'immediate' | 'fast';

/** Options of {@link startPrivatePostgres}. */
export interface PrivatePostgresOptions {
  /** An empty (or absent) folder for the cluster. Default: a new temporary folder. */
  readonly dataDir?: string;
  /** Puts the `justonce` database on a tmpfs of this many MB (see {@link PrivateDisk}). */
  readonly sizeMb?: number;
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
 * Why a private cluster cannot be started here (no binaries, not root, no `postgres` user),
 * or `undefined` when it can. Tests skip with this message.
 */
export function privatePostgresUnavailable(): string | undefined {
  if (postgresBinDir() === undefined) {
    return 'no PostgreSQL binaries under /usr/lib/postgresql/*/bin (initdb, pg_ctl, postgres)';
  }
  if (process.getuid?.() !== 0) return 'not root: cannot run the server as `postgres` or mount';
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
  } catch {
    return 'no `postgres` OS user to run the server as';
  }
  return undefined;
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

/** Runs a PostgreSQL binary as the `postgres` user; its output is in the error when it fails. */
async function asPostgres(bin: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run('runuser', ['-u', 'postgres', '--', bin, ...args], {
      timeout: 60_000,
    });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
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
  const dataDir = join(root, 'data');
  const tmpfsDir = options.sizeMb === undefined ? undefined : join(root, 'small');
  const filler = tmpfsDir === undefined ? undefined : join(tmpfsDir, 'filler');
  const port = await freePort();
  const ctl = join(bin, 'pg_ctl');
  let mounted = false;
  let running = false;
  let disposed: Promise<void> | undefined;

  const start = async (): Promise<void> => {
    // fsync off for speed: an `immediate` shutdown kills processes, not the OS, so the
    // page cache still holds every committed write; synchronous_commit stays on.
    const serverOptions = [
      `-p ${port}`,
      "-c listen_addresses='127.0.0.1'",
      `-k ${root}`,
      '-c fsync=off',
      '-c synchronous_commit=on',
      '-c full_page_writes=off',
      '-c max_connections=60',
      '-c shared_buffers=32MB',
    ].join(' ');
    running = true;
    await asPostgres(ctl, [
      'start',
      '-w',
      '-t',
      '60',
      '-D',
      dataDir,
      '-l',
      join(root, 'server.log'),
      '-o',
      serverOptions,
    ]);
  };
  const stop = async ({ mode = 'fast' }: { readonly mode?: ShutdownMode } = {}): Promise<void> => {
    await asPostgres(ctl, ['stop', '-w', '-t', '60', '-m', mode, '-D', dataDir]);
    running = false;
  };
  const psql = (sql: string, db = 'postgres'): Promise<string> =>
    asPostgres(join(bin, 'psql'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-d',
      db,
      '-v',
      'ON_ERROR_STOP=1',
      '-qAtc',
      sql,
    ]);

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
      if (running)
        execFileSync(ctl, ['stop', '-m', 'immediate', '-D', dataDir], { stdio: 'ignore' });
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
    await run('chown', ['-R', 'postgres:postgres', root]);
    await asPostgres(join(bin, 'initdb'), [
      '--no-sync',
      '-A',
      'trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--locale=C',
      '-D',
      dataDir,
    ]);
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
