import type { KeyRefusal } from './parse-key';

/**
 * The `type` URIs of the problems this package answers with (RFC 9457). They identify the
 * problem, for clients to branch on; they are not meant to be dereferenced.
 */
export const PROBLEM_TYPES = {
  /** 400: the route requires an `Idempotency-Key` and the request has none. */
  keyMissing: 'urn:justonce:problem:idempotency-key-missing',
  /** 400: the `Idempotency-Key` field cannot be used (see {@link KeyRefusal}). */
  keyMalformed: 'urn:justonce:problem:idempotency-key-malformed',
  /** 401: the route's `scope` found no client to keep the key apart from other clients'. */
  noScope: 'urn:justonce:problem:idempotency-scope-missing',
  /** 409: the first request with this key is still being processed. */
  inProgress: 'urn:justonce:problem:idempotency-key-in-progress',
  /** 422: the key was already used with a different request. */
  keyReused: 'urn:justonce:problem:idempotency-key-reused',
  /** 500: the first request with this key failed for good; send a new key. */
  keyFailed: 'urn:justonce:problem:idempotency-key-failed',
  /**
   * 500: the handler threw (or, in Express through `idempotencyErrorHandler`, anything
   * failed); nothing of the error is told, `instance` names its log line. Retriable.
   */
  requestFailed: 'urn:justonce:problem:request-failed',
  /** 503: the route's circuit breaker is open; retry after `Retry-After` seconds. */
  circuitOpen: 'urn:justonce:problem:circuit-open',
  /** 429: the request failed and the route's retry budget is spent; retry after `Retry-After`. */
  retryBudgetSpent: 'urn:justonce:problem:retry-budget-spent',
} as const;

/** An RFC 9457 problem details object, sent as `application/problem+json`. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /**
   * This occurrence, as `urn:uuid:…`: set on a `requestFailed` problem only, and logged with
   * the error, so that a client's report can be matched with the server's log line.
   */
  readonly instance?: string;
}

/** The media type of a {@link Problem} body. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const REFUSAL_DETAIL: Readonly<Record<KeyRefusal, string>> = {
  'several-values': 'The Idempotency-Key header must carry exactly one value.',
  empty: 'The Idempotency-Key header is empty.',
  syntax: 'The Idempotency-Key header is not a Structured Field string such as "8e03978e-40d5".',
  characters: 'The Idempotency-Key header may contain printable ASCII characters only.',
  'too-long': 'The Idempotency-Key header is longer than this endpoint accepts.',
};

/** 400: the key is required and absent. */
export function keyMissing(): Problem {
  return {
    type: PROBLEM_TYPES.keyMissing,
    title: 'Idempotency-Key is missing',
    status: 400,
    detail: 'This operation is idempotent and requires an Idempotency-Key request header.',
  };
}

/**
 * 400: the key cannot be used. The detail says why in fixed words: the key itself is never
 * echoed, so nothing the client sent ends up in the body (or in a log line made from it).
 */
export function keyMalformed(reason: KeyRefusal, maxKeyLength: number): Problem {
  const detail =
    reason === 'too-long'
      ? `The Idempotency-Key header is longer than ${maxKeyLength} characters.`
      : REFUSAL_DETAIL[reason];
  return {
    type: PROBLEM_TYPES.keyMalformed,
    title: 'Idempotency-Key is malformed',
    status: 400,
    detail,
  };
}

/** 401: no client to scope the key to. */
export function noScope(): Problem {
  return {
    type: PROBLEM_TYPES.noScope,
    title: 'No client to scope the Idempotency-Key to',
    status: 401,
    detail: 'Idempotency keys are kept per client; this request is not authenticated.',
  };
}

/** 409: the first request with the key has not finished. */
export function inProgress(): Problem {
  return {
    type: PROBLEM_TYPES.inProgress,
    title: 'A request with this Idempotency-Key is being processed',
    status: 409,
    detail: 'Retry the same request with the same key later to get its response.',
  };
}

/** 422: the key was used for another request. */
export function keyReused(): Problem {
  return {
    type: PROBLEM_TYPES.keyReused,
    title: 'Idempotency-Key is already used',
    status: 422,
    detail: 'This key was used with a different request; send a new key for a new request.',
  };
}

/** 500: the first request with the key failed for good (its response could not be stored). */
export function keyFailed(): Problem {
  return {
    type: PROBLEM_TYPES.keyFailed,
    title: 'The request with this Idempotency-Key failed',
    status: 500,
    detail: 'The first request with this key failed and cannot be retried with it; send a new key.',
  };
}

/** 500: the request failed on the server; nothing of the error is told. */
export function requestFailed(instance: string): Problem {
  return {
    type: PROBLEM_TYPES.requestFailed,
    title: 'The request failed',
    status: 500,
    detail:
      'The server could not complete this request; it is safe to send it again with the same Idempotency-Key.',
    instance,
  };
}

/**
 * A 4xx named by a thrown error's own status (`about:blank`: the status says it all). Its
 * message is not told: it may name what only the server should know.
 */
export function clientError(status: number, phrase: string): Problem {
  return {
    type: 'about:blank',
    title: phrase,
    status,
    detail: `The request was refused (${status} ${phrase}); nothing of it was applied.`,
  };
}

/** The bytes of a problem's body: its JSON. */
export function problemBody(problem: Problem): Uint8Array {
  return Buffer.from(JSON.stringify(problem), 'utf8');
}

/** 503: the route's breaker is open, so the request did not run. */
export function circuitOpen(): Problem {
  return {
    type: PROBLEM_TYPES.circuitOpen,
    title: 'Service temporarily unavailable',
    status: 503,
    detail:
      'A dependency of this operation keeps failing; the request did not run. Retry after the Retry-After delay.',
  };
}

/** 429: the request failed and the route's retry budget is spent. */
export function retryBudgetSpent(): Problem {
  return {
    type: PROBLEM_TYPES.retryBudgetSpent,
    title: 'Too many retries',
    status: 429,
    detail:
      'The request failed, and retries of this operation are over their budget. Retry after the Retry-After delay.',
  };
}
