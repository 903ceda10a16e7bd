import { ChangeMessageVisibilityBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '@justonce/core';
import { OutageNotice } from '../../client/outage-notice';
import { timeLimited } from '../../client/time-limits';
import type { HeldMessage } from './held-message';
import type { ConsumerInstruments } from '../meter/instruments';

/** Batch-entry error codes that mean the message is no longer ours to extend. */
const GONE = new Set([
  'ReceiptHandleIsInvalid',
  'MessageNotInflight',
  'AWS.SimpleQueueService.MessageNotInflight',
  'InvalidParameterValue',
]);

/**
 * Extends the visibility timeout of every message it watches, every `intervalMs`, with
 * `ChangeMessageVisibilityBatch` (ten entries per request). A message whose receipt handle
 * SQS no longer accepts has been (or will be) delivered again: it is dropped from the
 * watch and reported through `onStale`. @internal
 */
export class Heartbeat {
  private readonly watched = new Map<number, HeldMessage>();
  private timer: NodeJS.Timeout | undefined;
  /** The beat on its way, and the messages it extends. */
  private beating: { readonly done: Promise<void>; readonly seqs: ReadonlySet<number> } | null =
    null;
  private readonly outage: OutageNotice;

  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly visibilityTimeoutSeconds: number,
    private readonly intervalMs: number,
    private readonly requestMs: number,
    private readonly logger: Logger,
    private readonly instruments: ConsumerInstruments,
    private readonly onStale: (held: HeldMessage) => void,
  ) {
    this.outage = new OutageNotice(logger, { queueUrl });
  }

  /** Starts the timer. */
  start(): void {
    this.timer = setInterval(() => void this.beat(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer; watched messages are no longer extended. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }

  /** Extends `held` from the next beat on. */
  watch(held: HeldMessage): void {
    this.watched.set(held.seq, held);
  }

  /** No longer extends `held`. */
  unwatch(held: HeldMessage): void {
    this.watched.delete(held.seq);
  }

  /**
   * Resolves once no extension of `held` is on its way: a beat sent before `unwatch` could
   * otherwise land after a visibility the consumer sets next (a retry delay) and undo it.
   */
  async settled(held: HeldMessage): Promise<void> {
    const beat = this.beating;
    if (beat !== null && beat.seqs.has(held.seq)) await beat.done;
  }

  private async beat(): Promise<void> {
    if (this.beating !== null || this.watched.size === 0) return;
    const all = [...this.watched.values()];
    const chunks: HeldMessage[][] = [];
    for (let i = 0; i < all.length; i += 10) chunks.push(all.slice(i, i + 10));
    const done = Promise.all(chunks.map((chunk) => this.extend(chunk))).then(() => undefined);
    this.beating = { done, seqs: new Set(all.map((h) => h.seq)) };
    try {
      await done;
    } finally {
      this.beating = null;
    }
  }

  private async extend(chunk: readonly HeldMessage[]): Promise<void> {
    try {
      const response = await timeLimited('ChangeMessageVisibilityBatch', this.requestMs, (signal) =>
        this.client.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: chunk.map((h) => ({
              Id: String(h.seq),
              ReceiptHandle: h.receiptHandle,
              VisibilityTimeout: this.visibilityTimeoutSeconds,
            })),
          }),
          { abortSignal: signal },
        ),
      );
      this.outage.recovered('sqs consumer: visibility heartbeat works again');
      this.instruments.extended(response.Successful?.length ?? 0);
      for (const failed of response.Failed ?? []) {
        const held = this.watched.get(Number(failed.Id));
        if (held === undefined) continue;
        this.logger.warn('sqs consumer: could not extend the visibility of a message', {
          queueUrl: this.queueUrl,
          sqsMessageId: held.message.MessageId,
          code: failed.Code,
          error: failed.Message,
        });
        if (failed.SenderFault || GONE.has(failed.Code ?? '')) {
          this.watched.delete(held.seq);
          this.onStale(held);
        }
      }
    } catch (error) {
      // Once per outage: a partition fails every beat until it heals.
      this.outage.failed('sqs consumer: visibility heartbeat failed; retrying at each beat', error);
    }
  }
}
