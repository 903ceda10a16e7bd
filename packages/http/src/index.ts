/**
 * @justonce/http — Idempotency-Key handling for HTTP APIs on justonce operations: the
 * handler's writes, its outbox events and its stored response commit in one transaction,
 * and duplicates get the stored response byte for byte. This entry holds the Fetch API
 * wrapper and the engine's public parts; Express and Fastify have their own entries
 * (`@justonce/http/express`, `@justonce/http/fastify`).
 *
 * @packageDocumentation
 */
export { idempotent } from './fetch/idempotent';
export type { IdempotentHandler } from './fetch/idempotent';
export { toNodeListener } from './fetch/node-listener';
export type {
  ErrorLogging,
  FingerprintOptions,
  IdempotencyContext,
  IdempotencyOptions,
} from './engine/options';
export { parseIdempotencyKey } from './engine/parse-key';
export type { KeyRefusal, ParsedKey } from './engine/parse-key';
export { PROBLEM_TYPES, PROBLEM_CONTENT_TYPE } from './engine/problem';
export type { Problem } from './engine/problem';
export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from './engine/response';
export {
  IdempotencyContextError,
  IDEMPOTENCY_CONTEXT_MISSING,
  isIdempotencyContextError,
} from './errors/idempotency-context-error';
export {
  StoredResponseError,
  STORED_RESPONSE_UNREADABLE,
  isStoredResponseError,
} from './errors/stored-response-error';

// The engine, for adapters of other frameworks built outside this package (@justonce/nestjs):
// an adapter gives `handleRequest` a view of its request and a function that runs the handler
// in the transaction, and sends what the outcome says (see docs/http.md, "Other frameworks").
export { handleRequest } from './engine/handle-request';
export { errorResponse } from './engine/error-response';
export type { EngineRequest, Outcome, RunHandler } from './engine/handle-request';
export { resolveRoute } from './engine/resolve-options';
export type { ResolvedRoute } from './engine/resolve-options';
export { bodyFromBytes } from './engine/fingerprint';
export type { RequestBody, RequestView } from './engine/fingerprint';
export { headerPairs } from './engine/response';
export type { HeaderPair, HeldResponse } from './engine/response';
