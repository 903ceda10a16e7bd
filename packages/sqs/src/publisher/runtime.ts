import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '@justonce/core';
import type { OutageNotice } from '../client/outage-notice';
import type { ResolvedPublisherOptions } from './options';

/** Why a message was not published, as its `PublishResult` says it. @internal */
export type Failure = {
  readonly error: Error;
  readonly retriable: boolean;
  readonly outage?: boolean;
};

/** What the functions of one publisher share. @internal */
export interface PublisherRuntime {
  readonly settings: ResolvedPublisherOptions;
  readonly client: SQSClient;
  /** Whether the client was created here (and is destroyed by `close`). */
  readonly owned: boolean;
  readonly logger: Logger;
  /** Logs an outage once, and its end. */
  readonly outage: OutageNotice;
  /** Queue URLs by queue name, looked up once. */
  readonly urls: Map<string, Promise<string>>;
  closed: boolean;
}
