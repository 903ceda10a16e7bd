import { spawn, type ChildProcess } from 'node:child_process';

/** Options of {@link spawnUntilMarker}. */
export interface SpawnUntilMarkerOptions {
  /** Working directory of the child. */
  readonly cwd: string;
  /** Extra environment variables, on top of this process's. */
  readonly env?: Readonly<Record<string, string>>;
  /** The line the child prints when it has reached the point of interest. Default `AT-STEP`. */
  readonly marker?: string;
  /** How long to wait for the marker. Default 45 s. */
  readonly timeoutMs?: number;
  /** Called with the child as soon as it is spawned, so a test can kill it in cleanup. */
  readonly onSpawn?: (child: ChildProcess) => void;
}

/**
 * Runs a TypeScript file in a child Node process (through tsx) and resolves once the child
 * prints the marker — the moment a crash test kills it with SIGKILL. Rejects, with the
 * child's stderr, if it exits first or the marker does not come in time.
 */
export function spawnUntilMarker(
  script: string,
  options: SpawnUntilMarkerOptions,
): Promise<ChildProcess> {
  const marker = options.marker ?? 'AT-STEP';
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  options.onSpawn?.(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`child never printed ${marker}; stderr: ${stderr}`)),
      options.timeoutMs ?? 45_000,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes(marker)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited with ${code} before ${marker}; stderr: ${stderr}`));
    });
  });
}

/** An environment variable a child process cannot run without; throws when it is not set. */
export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}
