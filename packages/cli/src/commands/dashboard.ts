import type { Command } from 'commander';
import { parseInteger } from '../arguments';
import { checkGlobalOptions, withAdmin, type GlobalOptions } from '../connect';
import { UsageError } from '../usage-error';
import { say, complain } from '../format';

interface DashboardFlags {
  readonly port?: string;
  readonly host?: string;
  readonly token?: string;
  readonly slotLagWarning?: string;
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

/** `--slot-lag-warning`: a positive whole number of bytes, or the dashboard's default. */
function slotLagWarning(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  return parseInteger(value, '--slot-lag-warning', {
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    fallback: 1,
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
    .option(
      '--slot-lag-warning <bytes>',
      'mark a replication slot this many bytes behind or more (default 1073741824: 1 GiB)',
    )
    .action(async (flags: DashboardFlags) => {
      checkGlobalOptions(globals());
      const port = parseInteger(flags.port, '--port', { min: 0, max: 65_535, fallback: 4100 });
      const host = flags.host ?? '127.0.0.1';
      if (host.trim() === '') throw new UsageError('--host must not be empty');
      const token = flags.token ?? (process.env['JUSTONCE_DASHBOARD_TOKEN'] || undefined);
      // Its length is the dashboard's rule: it refuses a short one (ConfigurationError, exit 2).
      if (token === '') throw new UsageError('--token must not be empty');
      const slotLag = slotLagWarning(flags.slotLagWarning);
      // Loaded here, not at the top: the other commands need not load a web server.
      const { serveDashboard } = await import('@justonce/dashboard');
      await withAdmin(globals(), async (admin) => {
        const stopped = untilSignal();
        const server = await serveDashboard({
          admin,
          host,
          port,
          ...(token ? { token } : {}),
          ...(slotLag === undefined ? {} : { slotLagWarningBytes: slotLag }),
        });
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
