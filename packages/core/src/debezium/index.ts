export { debeziumOutboxConnector, type DebeziumConnector } from './outbox-connector';
export { debeziumOutboxSchema } from './outbox-schema';
export { STANDARD_OUTBOX_HEADERS } from './header-columns';
export type { DebeziumOutboxConnectorOptions, DebeziumOutboxTable } from './options';
