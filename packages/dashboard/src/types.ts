import type { Admin } from '@justonce/core/admin';

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  /** The operator's view of the store, from `createAdmin(store)`; the dashboard never closes it. */
  readonly admin: Admin;
  /**
   * The operator's token (at least 16 characters). Every action (requeue, delete, release)
   * needs it, through the login form's cookie or an `Authorization: Bearer` header. Without
   * it the dashboard is read-only.
   */
  readonly token?: string;
  /**
   * The path prefix the dashboard is mounted under, e.g. `'/ops'`; it must match the mount
   * point in Express, Fastify or your Fetch server. Default `''` (the root).
   */
  readonly basePath?: string;
  /**
   * How often the overview's chart samples `admin.status()`, in milliseconds (100 – 3 600 000).
   * Default 30 000.
   */
  readonly sampleEveryMs?: number;
  /** Shown in the page title and header. Default `'justonce'`. */
  readonly title?: string;
  /**
   * The overview marks a logical replication slot whose lag (WAL not yet confirmed by its
   * reader) reaches this many bytes, as it marks one whose WAL is `unreserved` or `lost`.
   * A positive whole number. Default 1 GiB (1 073 741 824).
   */
  readonly slotLagWarningBytes?: number;
}

/** What the server knows of the client behind a request, beyond the request itself. */
export interface DashboardClient {
  /**
   * The client's address, such as `req.socket.remoteAddress`, or the address a proxy you
   * trust vouches for. Wrong tokens are counted per address (and per channel: login form or
   * Bearer header); without one, all clients of a channel share one count.
   */
  readonly address?: string;
}

/** A running dashboard: a Fetch API handler. */
export interface Dashboard {
  /**
   * Answers one request; mount it in any Fetch server, or through {@link dashboardListener}.
   * Pass `client.address` where the server knows it (Bun:
   * `server.requestIP(request)?.address`), so one client's wrong tokens do not throttle the
   * others.
   */
  fetch(request: Request, client?: DashboardClient): Promise<Response>;
  /** The path prefix it serves (`''` for the root). */
  readonly basePath: string;
  /** Stops the status sampling behind the overview's chart. Idempotent. */
  close(): void;
}
