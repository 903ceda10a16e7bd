import { sleep } from '@justonce/core/transport';
import { DeleteMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '@justonce/core';
import { fullJitterBackoff } from '@justonce/core/retry';
import { errorName, isRetriableRequestError } from '../../client/request-errors';
import { timeLimited } from '../../client/time-limits';
import type { HeldMessage } from './held-message';
import type { ConsumerInstruments } from '../meter/instruments';

interface Pending {
  readonly held: HeldMessage;
  readonly resolve: (deleted: boolean) => void;
}

/** Attempts per delete entry (request failures and per-entry server faults). */
const ATTEMPTS = 4;

/**
 * Deletes settled messages with `DeleteMessageBatch`: a request goes out as soon as ten
 * are queued, or `flushDelayMs` after the first. Entries that fail by a server fault are
 * sent again (up to four attempts); an entry SQS refuses (its receipt handle expired, so
 * the message was delivered again) is given up: that redelivery is answered by the inbox
 * as a duplicate. @internal
 */
export class Deleter {
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly sending = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly logger: Logger,
    private readonly instruments: ConsumerInstruments,
    private readonly requestMs: number,
    private readonly flushDelayMs = 5,
  ) {}

  /** Queues `held` for deletion; resolves `true` once deleted, `false` when given up. */
  delete(held: HeldMessage): Promise<boolean> {
    return new Promise((resolve) => {
      this.queue.push({ held, resolve });
      if (this.queue.length >= 10 || this.closed) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.flushDelayMs);
    });
  }

  /** Sends everything queued and waits for every request in flight. */
  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    while (this.sending.size > 0) await Promise.all(this.sending);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) {
      const chunk = this.queue.splice(0, 10);
      const sending = this.send(chunk);
      this.sending.add(sending);
      void sending.finally(() => this.sending.delete(sending));
    }
  }

  private async send(chunk: Pending[]): Promise<void> {
    let pending = chunk;
    for (let attempt = 1; pending.length > 0; attempt++) {
      const last = attempt >= ATTEMPTS;
      const byId = new Map(pending.map((p) => [String(p.held.seq), p]));
      const again: Pending[] = [];
      try {
        const response = await timeLimited('DeleteMessageBatch', this.requestMs, (signal) =>
          this.client.send(
            new DeleteMessageBatchCommand({
              QueueUrl: this.queueUrl,
              Entries: pending.map((p) => ({
                Id: String(p.held.seq),
                ReceiptHandle: p.held.receiptHandle,
              })),
            }),
            { abortSignal: signal },
          ),
        );
        for (const ok of response.Successful ?? []) {
          byId.get(ok.Id ?? '')?.resolve(true);
          byId.delete(ok.Id ?? '');
        }
        this.instruments.deleted(response.Successful?.length ?? 0);
        for (const failed of response.Failed ?? []) {
          const p = byId.get(failed.Id ?? '');
          if (p === undefined) continue;
          byId.delete(failed.Id ?? '');
          if (!failed.SenderFault && !last) {
            again.push(p);
            continue;
          }
          this.giveUp(p, failed.Code ?? 'unknown', failed.Message);
        }
        // An entry SQS did not mention at all: try it again like a failed one.
        for (const p of byId.values()) {
          if (last) this.giveUp(p, 'no result', undefined);
          else again.push(p);
        }
      } catch (error) {
        if (last || !isRetriableRequestError(error)) {
          for (const p of pending) this.giveUp(p, errorName(error), (error as Error).message);
          return;
        }
        again.push(...pending);
      }
      pending = again;
      if (pending.length > 0)
        await sleep(fullJitterBackoff(attempt, { baseMs: 100, capMs: 2_000 }));
    }
  }

  private giveUp(p: Pending, code: string, message: string | undefined): void {
    this.instruments.deleteFailed(1);
    this.logger.warn(
      'sqs consumer: could not delete a settled message; its redelivery will be a duplicate',
      { queueUrl: this.queueUrl, sqsMessageId: p.held.message.MessageId, code, error: message },
    );
    p.resolve(false);
  }
}
