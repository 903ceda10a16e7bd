import { removeStrayPartitions } from './partition';
import { stopContainers } from '../services';

/**
 * Jest global teardown: stops the containers the global setup started, if any. Native
 * services stay running for the next run; `pnpm services:down` stops them.
 */
export default async function globalTeardown(): Promise<void> {
  // A run killed mid-partition leaves its firewall rules; none may outlive it.
  await removeStrayPartitions();
  await stopContainers();
}
