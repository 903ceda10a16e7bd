import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { ConfigurationError } from '@justonce/core';
import { createDashboard } from './create-dashboard';
import { DASHBOARD_OPTION_KEYS, rejectUnknownKeys } from './options';
import type { Dashboard, DashboardClient, DashboardOptions } from './types';

/** A node:http request listener (also an Express middleware). */
export type DashboardNodeListener = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** What Express adds to a request, as far as the listener cares. */
interface ExpressFields {
  originalUrl?: unknown;
  /** The client's address, after Express's `trust proxy` setting. */
  ip?: unknown;
  body?: unknown;
  rawBody?: unknown;
}

/** A body parser's object back into form bytes: `a=1&id=2&id=3`. */
function formBytes(body: object): Buffer {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(body)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item === 'string') params.append(name, item);
    }
  }
  return Buffer.from(params.toString());
}

/** The client of a request: Express's `req.ip` (which honours `trust proxy`), else the peer. */
function clientOf(req: IncomingMessage & ExpressFields): DashboardClient {
  const address = typeof req.ip === 'string' ? req.ip : req.socket.remoteAddress;
  return address === undefined ? {} : { address };
}

/**
 * The dashboard as a node:http listener, for `http.createServer(listener)` or Express's
 * `app.use('/ops', listener)` (Express strips the mount path from `req.url`; the listener
 * reads `req.originalUrl`, so create the dashboard with the same `basePath`). Mount it before
 * body parsers; if one ran first, the form it parsed is handed on. Wrong tokens are counted
 * per client address: the socket's peer, or Express's `req.ip` (set `trust proxy` behind a
 * proxy you trust).
 */
export function dashboardListener(dashboard: Dashboard): DashboardNodeListener {
  const listener = getRequestListener(
    (request, env) =>
      dashboard.fetch(request, clientOf(env.incoming as IncomingMessage & ExpressFields)),
    { overrideGlobalObjects: false },
  );
  return (req, res) => {
    const extra = req as IncomingMessage & ExpressFields;
    if (typeof extra.originalUrl === 'string') req.url = extra.originalUrl;
    if (
      !(extra.rawBody instanceof Buffer) &&
      req.readableEnded &&
      typeof extra.body === 'object' &&
      extra.body !== null
    ) {
      extra.rawBody = formBytes(extra.body);
    }
    return listener(req, res);
  };
}

/** Options of {@link serveDashboard}: the dashboard's, and where to listen. */
export interface ServeDashboardOptions extends DashboardOptions {
  /** Default `'127.0.0.1'`: only this machine. */
  readonly host?: string;
  /** Default 4100; 0 picks a free port. */
  readonly port?: number;
}

/** A dashboard listening on its own node:http server. */
export interface ServedDashboard {
  /** Its address, e.g. `http://127.0.0.1:4100/` (with the base path). */
  readonly url: string;
  readonly dashboard: Dashboard;
  /** Stops sampling and closes the server (open connections included). */
  close(): Promise<void>;
}

/**
 * Serves a dashboard on its own node:http server: what `justonce dashboard` runs.
 *
 * @throws ConfigurationError for bad options; the promise rejects when the port is taken.
 */
export async function serveDashboard(options: ServeDashboardOptions): Promise<ServedDashboard> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('serveDashboard: options must be an object with `admin`');
  }
  rejectUnknownKeys('serveDashboard', options, [...DASHBOARD_OPTION_KEYS, 'host', 'port']);
  const { host = '127.0.0.1', port = 4100, ...dashboardOptions } = options;
  if (typeof host !== 'string' || host === '')
    throw new ConfigurationError('serveDashboard: `host` must be a host name or address');
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new ConfigurationError('serveDashboard: `port` must be an integer from 0 to 65535', {
      port,
    });
  }
  const dashboard = createDashboard(dashboardOptions);
  const server = createServer(dashboardListener(dashboard));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    dashboard.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}${dashboard.basePath}/`,
    dashboard,
    close: async () => {
      dashboard.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
