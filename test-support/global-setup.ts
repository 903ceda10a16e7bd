import { removeStrayPartitions } from './partition';
import { exportToEnv, resolveServices, SERVICE_NAMES } from '../services';

/**
 * Jest global setup: finds or starts PostgreSQL, Kafka, SQS (ElasticMQ), RabbitMQ,
 * MySQL/MariaDB, the logical-replication PostgreSQL and Kafka Connect (see docs/services.md
 * for the order) and exports `DATABASE_URL`, `KAFKA_BROKERS`, `SQS_ENDPOINT`, `AMQP_URL`,
 * `MYSQL_URL`, `LOGICAL_DATABASE_URL` and `KAFKA_CONNECT_URL`, which the test workers inherit
 * and `test-support/services.ts` reads.
 * Native services stay running afterwards, so the next run reuses them; containers are
 * stopped by the global teardown.
 */
export default async function globalSetup(): Promise<void> {
  // A run killed mid-partition leaves its firewall rules; none may outlive it.
  await removeStrayPartitions();
  // The AWS SDK's notice about future Node.js versions says nothing about the tests.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const lines: string[] = [];
  const services = await resolveServices(SERVICE_NAMES, { log: (line) => lines.push(line) });
  exportToEnv(services);
  if (process.env.JUSTONCE_SERVICES_QUIET !== '1') {
    process.stdout.write(`\nservices:\n${lines.map((line) => `  ${line}`).join('\n')}\n`);
  }
}
