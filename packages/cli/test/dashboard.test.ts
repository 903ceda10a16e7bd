/**
 * `justonce dashboard`: serves the dashboard of @justonce/dashboard on the store until
 * SIGINT or SIGTERM (exit 0); bad options refused with exit 2.
 */
import type { Store } from '@justonce/core';
import { startCli, useSchema } from './cli-process';
import { deadLetters, pendingEvents } from './seed';

const db = useSchema('cli_dash', async (store: Store) => {
  await pendingEvents(store, 'orders', 2);
  await deadLetters(store, 'billing', ['b-1'], 'payments');
});
const { inSchema } = db;

/** Starts the dashboard on a free port and resolves with its URL. */
async function serve(args: readonly string[], env: Record<string, string> = {}) {
  const running = startCli(['--schema', db.store.schema, 'dashboard', '--port', '0', ...args], env);
  const out = await running.stdoutMatching(/justonce dashboard on (http:\/\/\S+)/);
  const url = /justonce dashboard on (http:\/\/\S+)/.exec(out)![1]!;
  return { running, url };
}

describe('dashboard', () => {
  it('serves the overview on 127.0.0.1 until SIGINT, exit 0; reads need no token', async () => {
    const { running, url } = await serve([]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/orders/);
    const run = await running.stop('SIGINT');
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/no token .*actions are refused/);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('takes the token from JUSTONCE_DASHBOARD_TOKEN; SIGTERM ends it with exit 0', async () => {
    const { running, url } = await serve([], {
      JUSTONCE_DASHBOARD_TOKEN: 'a-long-operator-token-1234',
    });
    expect((await fetch(url)).status).toBe(200);
    const run = await running.stop('SIGTERM');
    expect(run.code).toBe(0);
    expect(run.stderr).not.toMatch(/no token/);
  });

  it.each([
    [['dashboard', '--port', '70000'], /--port must be an integer from 0 to 65535/],
    [['dashboard', '--port', '0', '--token', 'short'], /token/],
    [['dashboard', '--host', ''], /--host must not be empty/],
  ])('bad arguments %j: exit 2', async (args, message) => {
    const run = await inSchema(...args);
    expect(run.stderr).toMatch(message);
    expect(run.code).toBe(2);
  });
});
