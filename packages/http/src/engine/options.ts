import type {
  KnexTransaction,
  Logger,
  Once,
  Operations,
  ResilienceOptions,
  Store,
} from '@justonce/core';

/** What counts in the default fingerprint besides the method, the path and the body. */
export interface FingerprintOptions {
  /**
   * Request headers whose values count (names, any case), for headers that change what the
   * request means (`accept-language`, an API version header). Default none.
   */
  readonly headers?: readonly string[];
  /**
   * Top-level fields of a JSON object body left out, for values a client changes on each
   * retry (a client timestamp, a request counter). Default none.
   */
  readonly ignoreFields?: readonly string[];
}

/**
 * The options of one idempotent route, shared by every adapter; `Req` is the framework's
 * request (Fetch `Request`, Express `Request`, `FastifyRequest`). Validated when the route
 * is built: a bad value or an unknown key is a `ConfigurationError` then, not at the first
 * request.
 */
export interface IdempotencyOptions<Req, Tx = KnexTransaction> {
  /**
   * The operations the records live in: `createOperations({ store })`. Their `transactions`
   * adapter opens the business transaction, so it decides what `trx` the handler gets.
   */
  readonly operations: Operations<Tx>;
  /**
   * The operation name, e.g. `create-order`: one per route. With the scope and the key it
   * names the record; 1–200 characters.
   */
  readonly operation: string;
  /**
   * Who the key belongs to: a function returning the tenant or authenticated client of the
   * request, passed to operations as the record's scope, so that one client can never get
   * another's stored response by sending its key (the draft's security considerations).
   * `undefined` or `''` answers 401. `'shared'` puts every request of the route in the
   * operations' default scope: only for routes without clients (a single-tenant service).
   */
  readonly scope: ((request: Req) => string | undefined | Promise<string | undefined>) | 'shared';
  /**
   * Whether a request must carry an `Idempotency-Key`. Default `true`: a request without one
   * gets 400. With `false`, a request without one runs the handler in a plain transaction,
   * opened as `operations` opens its own, with no record and no replay.
   */
  readonly required?: boolean;
  /**
   * Not needed any more: a keyless request's transaction is opened by `operations`. Still
   * accepted (and checked to be a store) so that code written for it keeps working.
   *
   * @deprecated Leave it out.
   */
  readonly store?: Store;
  /**
   * What makes two requests with one key the same request. Default: the method, the path
   * with its query string, and the body (the canonical JSON of a JSON body, so key order and
   * spacing do not count; the exact bytes of any other body). An object adds headers or
   * leaves out body fields; a function replaces the whole fingerprint with its JSON result.
   * A key sent again with a different fingerprint gets 422.
   */
  readonly fingerprint?: FingerprintOptions | ((request: Req) => unknown);
  /**
   * Which handler statuses are stored and replayed (and commit the handler's transaction).
   * Default: 200–499. Any other status rolls the transaction back and leaves the key free
   * for a retry, as a thrown error does.
   */
  readonly storeStatuses?: (status: number) => boolean;
  /**
   * Response headers stored and replayed besides `content-type` (e.g. `location`). Names,
   * any case. Default none. A first response carries every header the handler set; a
   * replay carries only these.
   */
  readonly replayHeaders?: readonly string[];
  /** What a request does when the first request with its key is still running. */
  readonly inProgress?: {
    /**
     * How long it waits for the first to finish before it gets 409, in milliseconds; it
     * then replays the first's response. Default: the operations' `waitForInProgressMs`
     * (0 unless set: 409 at once).
     */
    readonly waitMs?: number;
  };
  /**
   * How long a key answers with its stored response, in milliseconds; after that it is free
   * again. Default: the operations' `retentionMs` (7 days unless set).
   */
  readonly retentionMs?: number;
  /**
   * Longest key accepted, in characters. Default 255; keep it no larger than the operations'
   * `maxKeyLength` (also 255 by default).
   */
  readonly maxKeyLength?: number;
  /**
   * Retry budget and circuit breakers of the route, the same option as every consumer's
   * (docs/load-shedding.md): while the breaker is open a request gets 503 with `Retry-After`
   * (seconds until the probe) without running; a failure the budget does not pay for gets
   * 429 with `Retry-After` (`budget.spentDelayMs`) instead of its error. `breaker.key` gets
   * the framework's request. Default: none.
   */
  readonly resilience?: ResilienceOptions<Req>;
}

/** What a handler gets besides the request. */
export interface IdempotencyContext<Tx = KnexTransaction> {
  /**
   * The business transaction. Write everything through it (and add outbox events in it):
   * it commits together with the stored response, or not at all.
   */
  readonly trx: Tx;
  /** The request's idempotency key; `undefined` on a route where it is optional and absent. */
  readonly key: string | undefined;
  /**
   * Runs a non-transactional side effect (a payment provider's charge) once for this
   * request's record and step, recorded outside `trx` in the route's operations: a retry of
   * the request after a crash or a rolled-back response replays its result instead of calling
   * again. Rejects with `OnceUnavailableError` on a request without a key (there is no record
   * to key it by). See docs/side-effects.md.
   */
  readonly once: Once;
}

/**
 * Where the adapters (`idempotent`, `idempotency`, `idempotencyPlugin`) log an error the
 * handler throws, which they answer themselves; taken beside {@link IdempotencyOptions}.
 */
export interface ErrorLogging {
  /**
   * `logger.error` gets the 500's `instance`, the `operation` and the `error`; a thrown error
   * with a 4xx status of its own goes to `logger.info`. The key is never logged. Default:
   * `console.error`, as the frameworks' own error handlers printed these errors; other
   * levels dropped.
   */
  readonly logger?: Logger;
}
