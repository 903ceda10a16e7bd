/**
 * Jest global setup. Resolves the services the tests need and exports their addresses as
 * environment variables, which the test workers inherit.
 */
export default async function globalSetup(): Promise<void> {
  process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
  process.env.AMQP_URL ??= 'amqp://guest:guest@127.0.0.1:5672';
}
