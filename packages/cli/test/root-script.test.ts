/**
 * `pnpm justonce …` at the repository's root (the root package.json's `justonce` script):
 * the CLI from its sources, with no build, its arguments and exit code passed through, as
 * README.md's "Operating it" says. Runs pnpm itself, as a contributor would.
 */
import { spawn } from 'node:child_process';
import { ROOT, type Run } from './cli-process';

/** Runs `pnpm --silent justonce args…` at the root, without DATABASE_URL. */
function pnpmJustonce(args: readonly string[]): Promise<Run> {
  const env = { ...process.env };
  delete env['DATABASE_URL'];
  const child = spawn('pnpm', ['--silent', 'justonce', ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('pnpm justonce at the repository root', () => {
  it('runs the CLI from source: status --help prints the command help', async () => {
    const run = await pnpmJustonce(['status', '--help']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Usage: justonce status \[options\]/);
    expect(run.stdout).toContain('--watch');
  }, 60_000);

  it('passes the arguments and the exit code through', async () => {
    const run = await pnpmJustonce(['status']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('justonce: no database: pass --database-url or --pglite');
  }, 60_000);
});
