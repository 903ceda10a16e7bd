import type { ConfirmChannel, Message, Options } from 'amqplib';
import { PublishRejectedError, RabbitConnectionError, UnroutableMessageError } from '../errors';
import type { AmqpSession } from './connection';

interface Pending {
  readonly exchange: string;
  readonly routingKey: string;
  readonly messageId: string | undefined;
  returned?: UnroutableMessageError;
}

/**
 * Publishes on a session's confirm channel and settles each publish exactly once: resolved
 * when the broker confirms it, rejected when the broker returns it as unroutable (every
 * publish is `mandatory`), nacks it, the channel closes, or no confirm comes in time.
 *
 * The broker sends `basic.return` before the `basic.ack` of the same message, and amqplib
 * delivers frames in order, so a return is matched to the oldest pending publish with the
 * same exchange, routing key and message id, which is then rejected when its ack arrives.
 * Publishes identical in those three route identically, so a mismatch between twins cannot
 * change anyone's outcome. @internal
 */
export class ConfirmedPublisher {
  private readonly pending: Pending[] = [];
  private blocked: Promise<void> | undefined;

  constructor(
    private readonly session: AmqpSession,
    private readonly confirmTimeoutMs: number,
  ) {
    session.channel.on('return', (message: Message) => this.onReturn(message));
  }

  /** The channel this publisher writes to. */
  get channel(): ConfirmChannel {
    return this.session.channel;
  }

  /**
   * Resolves when the channel can take more writes (amqplib's `publish` returned false and
   * `drain` has not fired yet), or rejects once the session is lost.
   */
  async writable(): Promise<void> {
    if (this.session.lost) throw lostError();
    if (this.blocked) await this.blocked;
    if (this.session.lost) throw lostError();
  }

  /** Publishes one message with `mandatory` set; settles as described on the class. */
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish,
  ): Promise<void> {
    if (this.session.lost) return Promise.reject(lostError());
    const entry: Pending = {
      exchange,
      routingKey,
      messageId: typeof options.messageId === 'string' ? options.messageId : undefined,
    };
    this.pending.push(entry);
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(
          new PublishRejectedError(`no publisher confirm within ${this.confirmTimeoutMs} ms`, {
            details: { exchange, routingKey },
          }),
        );
      }, this.confirmTimeoutMs);
      timer.unref();
      const settle = (error: unknown) => {
        this.remove(entry);
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        if (entry.returned) reject(entry.returned);
        else if (error) reject(confirmError(error, exchange, routingKey));
        else resolve();
      };
      let accepted: boolean;
      try {
        accepted = this.session.channel.publish(
          exchange,
          routingKey,
          content,
          { ...options, mandatory: true },
          settle,
        );
      } catch (error) {
        // amqplib throws synchronously when the channel is already closed.
        settle(error);
        return;
      }
      if (!accepted && !this.blocked) {
        this.blocked = new Promise<void>((release) => {
          const done = () => {
            this.blocked = undefined;
            this.session.channel.removeListener('drain', done);
            release();
          };
          this.session.channel.once('drain', done);
          void this.session.whenLost.then(done);
        });
      }
    });
  }

  private onReturn(message: Message): void {
    const { exchange, routingKey, replyCode, replyText } = message.fields as unknown as {
      exchange: string;
      routingKey: string;
      replyCode: number;
      replyText: string;
    };
    const messageId: unknown = message.properties.messageId;
    const entry = this.pending.find(
      (p) =>
        p.returned === undefined &&
        p.exchange === exchange &&
        p.routingKey === routingKey &&
        p.messageId === (typeof messageId === 'string' ? messageId : undefined),
    );
    if (!entry) return;
    entry.returned = new UnroutableMessageError(
      `unroutable: exchange "${exchange}" routed routing key "${routingKey}" to no queue`,
      { exchange, routingKey, replyCode, replyText },
    );
  }

  private remove(entry: Pending): void {
    const index = this.pending.indexOf(entry);
    if (index >= 0) this.pending.splice(index, 1);
  }
}

function lostError(): RabbitConnectionError {
  return new RabbitConnectionError('the channel is closed');
}

function confirmError(error: unknown, exchange: string, routingKey: string): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (/nack/i.test(message)) {
    return new PublishRejectedError('the broker nacked the message', {
      cause: error,
      details: { exchange, routingKey },
    });
  }
  return new RabbitConnectionError(`the channel closed before the confirm: ${message}`, {
    cause: error,
    details: { exchange, routingKey },
  });
}
