import type { Command } from 'commander';
import { parseInteger } from '../arguments';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { UsageError } from '../usage-error';
import { say, complain } from '../format';

interface DashboardFlags {
  readonly port?: string;
  readonly host?: string;
  readonly token?: string;
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/** `justonce dashboard`: serves the dashboard until SIGINT or SIGTERM, then exits 0. */
export function dashboardCommand(program: Command, globals: () => GlobalOptions): void {
  program
    .command('dashboard')
    .description(
      'serve the dashboard (overview, dead letters, outbox, operations) until Ctrl-C; reads ' +
        'need no token, every action needs the token',
    )
    .option('--port <port>', 'port to listen on, 0 for any free one (default 4100)')
    .option('--host <host>', 'address to listen on (default 127.0.0.1: this machine only)')
    .option('--token <token>', 'token every action needs (default: $JUSTONCE_DASHBOARD_TOKEN)')
    .action(async (flags: DashboardFlags) => {
      checkGlobalOptions(globals());
      const port = parseInteger(flags.port, '--port', { min: 0, max: 65_535, fallback: 4100 });
      const host = flags.host ?? '127.0.0.1';
      if (host.trim() === '') throw new UsageError('--host must not be empty');
      const token = flags.token ?? (process.env['JUSTONCE_DASHBOARD_TOKEN'] || undefined);
      // Its length is the dashboard's rule: it refuses a short one (ConfigurationError, exit 2).
      if (token === '') throw new UsageError('--token must not be empty');
      // Loaded here, not at the top: the other commands need not load a web server.
      const { serveDashboard } = await import('@justonce/dashboard');
      await withAdmin(globals(), async (admin) => {
        const stopped = untilSignal();
        const server = await serveDashboard({ admin, host, port, ...(token ? { token } : {}) });
        say(`justonce dashboard on ${server.url}`);
        if (!token) {
          complain(
            'no token (--token or JUSTONCE_DASHBOARD_TOKEN): pages can be read, actions are refused',
          );
        }
        await stopped;
        await server.close();
      });
    });
}
