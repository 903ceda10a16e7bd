import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { ConfigurationError } from '@justonce/core';

/**
 * Where a worker or publisher gets its SQS client: pass `client` to share one you own (it
 * is never destroyed for you), or `clientConfig` to have one created and destroyed with the
 * worker or publisher.
 */
export interface SqsClientSource {
  /** An SQS client you own. Exclusive with `clientConfig`. */
  readonly client?: SQSClient;
  /** Configuration for a client the worker or publisher creates and destroys. */
  readonly clientConfig?: SQSClientConfig;
}

/** A resolved client and whether it was created here (and must be destroyed here). @internal */
export interface OwnedClient {
  readonly client: SQSClient;
  readonly owned: boolean;
}

/** Picks the client from `client` or `clientConfig`; exactly one must be given. @internal */
export function resolveClient(source: SqsClientSource, who: string): OwnedClient {
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
  return { client: new SQSClient(clientConfig), owned: true };
}
