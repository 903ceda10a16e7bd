import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { ConfigurationError } from '@justonce/core';
import type { ResolvedTimeouts } from './time-limits';

/**
 * Where a consumer or publisher gets its SQS client: pass `client` to share one you own (it
 * is never destroyed for you, and keeps its own configuration: request handler, retries),
 * or `clientConfig` to have one created and destroyed with the consumer or publisher (its
 * request handler gets `timeouts.connectMs` unless the config names one). Either way each
 * call is limited by `timeouts.requestMs`.
 */
export interface SqsClientSource {
  /** An SQS client you own. Exclusive with `clientConfig`. */
  readonly client?: SQSClient;
  /** Configuration for a client the consumer or publisher creates and destroys. */
  readonly clientConfig?: SQSClientConfig;
}

/** A resolved client and whether it was created here (and must be destroyed here). @internal */
export interface OwnedClient {
  readonly client: SQSClient;
  readonly owned: boolean;
}

/**
 * Picks the client from `client` or `clientConfig`; exactly one must be given. A client
 * created here gets `connectMs` as its connect limit, unless the config has its own
 * `requestHandler`. @internal
 */
export function resolveClient(
  source: SqsClientSource,
  who: string,
  timeouts: ResolvedTimeouts,
): OwnedClient {
  const { client, clientConfig } = source;
  if (client !== undefined && clientConfig !== undefined) {
    throw new ConfigurationError(`${who} takes client or clientConfig, not both`);
  }
  if (client !== undefined) {
    if (typeof client !== 'object' || client === null || typeof client.send !== 'function') {
      throw new ConfigurationError(`${who}: client must be an SQSClient`);
    }
    return { client, owned: false };
  }
  if (clientConfig === undefined) {
    throw new ConfigurationError(`${who} needs client (an SQSClient) or clientConfig`);
  }
  if (typeof clientConfig !== 'object' || clientConfig === null) {
    throw new ConfigurationError(`${who}: clientConfig must be an SQSClientConfig object`);
  }
  // Only the connect limit goes into the handler: the per-call limit is applied to each
  // call (it must be longer for a long poll than for the other calls).
  const requestHandler =
    clientConfig.requestHandler ??
    (timeouts.connectMs > 0 ? { connectionTimeout: timeouts.connectMs } : undefined);
  return {
    client: new SQSClient({ ...clientConfig, ...(requestHandler ? { requestHandler } : {}) }),
    owned: true,
  };
}
