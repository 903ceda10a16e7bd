/**
 * @justonce/core — transactional inbox, outbox and relay, idempotent operations, retry
 * policies and dead letters on PostgreSQL or embedded PGlite.
 *
 * @packageDocumentation
 */
export * from './errors';
export * from './store';
export * from './transport';
export * from './observability';
export * from './retry';
