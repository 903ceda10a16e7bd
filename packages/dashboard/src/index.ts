/**
 * @justonce/dashboard — the on-call engineer's pages over a justonce store: the status with a
 * chart of the last hour, dead letters, the outbox and operations, with requeue, delete and
 * release behind the operator's token. A Fetch API handler (Hono) to serve alone or mount in
 * Express, Fastify or any Fetch server.
 *
 * @packageDocumentation
 */
export { createDashboard } from './create-dashboard';
export type { Dashboard, DashboardClient, DashboardOptions } from './types';
export {
  dashboardListener,
  serveDashboard,
  type DashboardNodeListener,
  type ServeDashboardOptions,
  type ServedDashboard,
} from './node';
export {
  fastifyDashboard,
  type FastifyInstanceLike,
  type FastifyReplyLike,
  type FastifyRequestLike,
} from './fastify';
