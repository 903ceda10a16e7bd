/**
 * The shared Kafka Connect worker (`KAFKA_CONNECT_URL`) has Debezium's PostgreSQL connector and
 * outbox event router, and Debezium's own validation accepts the configuration
 * `debeziumOutboxConnector` produces: every setting, each transform and its options, and a
 * connection to the database. The relay itself is debezium-outbox.test.ts, on a private worker.
 */
import { debeziumOutboxConnector } from '@justonce/core';
import { databaseUrl, kafkaConnectUrl } from '../../../test-support/services';

const CONNECTOR_CLASS = 'io.debezium.connector.postgresql.PostgresConnector';

interface Validation {
  readonly error_count: number;
  /** One entry per setting; `value` is null for some of the connector's own definitions. */
  readonly configs: Array<{
    readonly value: { readonly name: string; readonly errors: string[] } | null;
  }>;
}

/** Connect's `PUT /connector-plugins/<class>/config/validate`; the settings that failed. */
async function validate(config: Record<string, string>): Promise<Record<string, string[]>> {
  const response = await fetch(
    `${kafkaConnectUrl()}/connector-plugins/${CONNECTOR_CLASS}/config/validate`,
    {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(config),
    },
  );
  expect(response.status).toBe(200);
  const result = (await response.json()) as Validation;
  const failed = Object.fromEntries(
    result.configs.flatMap(({ value }) =>
      value !== null && value.errors.length > 0 ? [[value.name, value.errors]] : [],
    ),
  );
  expect(Object.keys(failed).length).toBe(result.error_count);
  return failed;
}

describe('the shared Kafka Connect worker', () => {
  it("lists Debezium's PostgreSQL connector and outbox event router", async () => {
    const response = await fetch(`${kafkaConnectUrl()}/connector-plugins?connectorsOnly=false`);
    const plugins = (await response.json()) as Array<{ class: string; version: string }>;
    const classes = plugins.map((plugin) => plugin.class);
    expect(classes).toEqual(
      expect.arrayContaining([
        CONNECTOR_CLASS,
        'io.debezium.transforms.outbox.EventRouter',
        'org.apache.kafka.connect.transforms.DropHeaders',
      ]),
    );
  });

  it('validates the outbox connector without an error', async () => {
    const { name, config } = debeziumOutboxConnector({
      databaseUrl: databaseUrl(),
      headers: ['x-source'],
    });
    expect(await validate({ ...config, name })).toEqual({});
  });

  it('reports a transform setting that is wrong', async () => {
    const { name, config } = debeziumOutboxConnector({ databaseUrl: databaseUrl() });
    const failed = await validate({ ...config, name, 'transforms.dropRouterId.headers': '' });
    expect(Object.keys(failed)).toEqual(['transforms.dropRouterId.headers']);
  });
});
