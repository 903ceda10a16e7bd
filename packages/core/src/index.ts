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
export * from './outbox';
export * from './messages';
export * from './operations';
export * from './relay';
export * from './retention';
export * from './inbox';
export * from './dead-letters';
export * from './transactions';
export * from './admin';
