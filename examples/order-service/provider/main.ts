/**
 * The fake payment provider as a process of its own (see server.ts), keeping its books in
 * the provider schema so that a SIGKILL does not make it forget a charge.
 */
import { seededRandom } from '@justonce/core/testing';
import { configFromEnv, PROVIDER_SLOW_MS } from '../config';
import { serviceMain } from '../service-process';
import { sqlLedger } from './ledger';
import { createProviderServer } from './server';

serviceMain('provider', async () => {
  const config = configFromEnv();
  const schema = config.names.schemas.provider;
  const ledger = await sqlLedger(config.databaseUrl, schema);
  // A restarted provider draws a new sequence: the seed and the process id together.
  const random = seededRandom(config.seed * 1_000_003 + process.pid);
  const server = createProviderServer({
    ledger,
    random,
    failRate: 0.05,
    slowRate: 0.02,
    slowMs: PROVIDER_SLOW_MS,
  });
  await new Promise<void>((resolve) => server.listen(config.providerPort, '127.0.0.1', resolve));
  return async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await ledger.close();
  };
});
