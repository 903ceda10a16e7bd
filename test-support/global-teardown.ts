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
  // Every suite closes what it opens, so the process exits by itself. Should a client ever
  // stay open, a CI run must still end: exit with the code Jest set (it sets it on 'exit').
  setTimeout(() => {
    process.stderr.write('jest: something stayed open 10 s after the run; exiting\n');
    process.exit();
  }, 10_000).unref();
}
