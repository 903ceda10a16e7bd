import { stopContainers } from '../services';

/**
 * Jest global teardown: stops the containers the global setup started, if any. Native
 * services stay running for the next run; `pnpm services:down` stops them.
 */
export default async function globalTeardown(): Promise<void> {
  await stopContainers();
}
