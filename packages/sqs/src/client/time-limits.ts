import { ConfigurationError } from '@justonce/core';
import {
  integerOption,
  optionKeys,
  rejectUnknownOptions,
  withTimeout,
} from '@justonce/core/transport';
import { SqsTimeoutError } from '../errors/timeout-error';

/**
 * Time limits of the SQS calls a consumer or publisher makes, in milliseconds; `0` turns one
 * off. Without them a call on a connection the network dropped (a partition, a vanished
 * host) waits for the kernel's TCP retransmissions, which take many minutes.
 */
export interface SqsTimeoutOptions {
  /**
   * TCP connect (and TLS) of a new connection: the request handler's `connectionTimeout`.
   * Applies to a client created from `clientConfig` only, and only when that config has no
   * `requestHandler` of its own. Default 5 000.
   */
  readonly connectMs?: number;
  /**
   * Each call from its start to its answer, the SDK's own retries included; a
   * `ReceiveMessage` gets its long-poll wait (`waitTimeSeconds`) on top. When it fires the
   * request is aborted (its connection destroyed) and the call fails with
   * {@link SqsTimeoutError}. Applies to every call the consumer or publisher makes, on a
   * client you pass in too. Default 10 000.
   */
  readonly requestMs?: number;
}

/** {@link SqsTimeoutOptions} checked, with defaults applied. @internal */
export interface ResolvedTimeouts {
  readonly connectMs: number;
  readonly requestMs: number;
}

/** Default of `timeouts.connectMs`. @internal */
export const DEFAULT_CONNECT_MS = 5_000;
/** Default of `timeouts.requestMs`. @internal */
export const DEFAULT_REQUEST_MS = 10_000;

const TIMEOUT_KEYS = optionKeys<SqsTimeoutOptions>()(['connectMs', 'requestMs']);

/** Validates `timeouts`; every problem is a {@link ConfigurationError}. @internal */
export function resolveTimeouts(value: unknown, context: string): ResolvedTimeouts {
  if (value === undefined) {
    return { connectMs: DEFAULT_CONNECT_MS, requestMs: DEFAULT_REQUEST_MS };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError('timeouts must be an object');
  }
  rejectUnknownOptions(value, TIMEOUT_KEYS, context, 'timeouts');
  const t = value as SqsTimeoutOptions;
  return {
    connectMs: integerOption(t.connectMs, 'timeouts.connectMs', DEFAULT_CONNECT_MS, 0, 600_000),
    requestMs: integerOption(t.requestMs, 'timeouts.requestMs', DEFAULT_REQUEST_MS, 0, 600_000),
  };
}

/**
 * Runs one SQS call with a time limit: `run` gets the signal to pass as the call's
 * `abortSignal`, aborted when `limitMs` passes (or `outer` aborts). The promise rejects with
 * {@link SqsTimeoutError} at the limit even if the SDK is slow to give up, so the caller is
 * never held longer. `limitMs` 0: no limit. @internal
 */
export function timeLimited<T>(
  operation: string,
  limitMs: number,
  run: (signal: AbortSignal | undefined) => Promise<T>,
  outer?: AbortSignal,
): Promise<T> {
  if (limitMs <= 0) return run(outer);
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(outer?.reason);
  if (outer?.aborted) onOuterAbort();
  else outer?.addEventListener('abort', onOuterAbort, { once: true });
  const limited = withTimeout(run(controller.signal), limitMs, () => {
    const error = new SqsTimeoutError({ operation, limitMs });
    controller.abort(error);
    return error;
  });
  return limited.finally(() => outer?.removeEventListener('abort', onOuterAbort));
}
