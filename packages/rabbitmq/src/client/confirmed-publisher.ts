import { errorMessage } from '@justonce/core/transport';
import type { Message, Options } from 'amqplib';
import { PublishRejectedError, RabbitConnectionError, UnroutableMessageError } from '../errors';
import type { AmqpSession } from './connection';

/** Called once with a publish's outcome: no error when the broker confirmed it. */
export type PublishDone = (error: Error | undefined) => void;

interface Pending {
  readonly exchange: string;
  readonly routingKey: string;
  readonly messageId: string | undefined;
  readonly deadline: number;
  returned?: UnroutableMessageError;
  settled: boolean;
  readonly done: PublishDone;
}

/** Reports a publish's outcome once; later calls do nothing. */
function settle(entry: Pending, error: Error | undefined): void {
  if (entry.settled) return;
  entry.settled = true;
  entry.done(error);
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
 * change anyone's outcome.
 *
 * Confirm timeouts are swept by one timer rather than one per message: pending publishes
 * are kept in publish order, so the sweep stops at the first one still in time. A confirm
 * that does not come in time means the broker, not the message, stopped answering (a
 * half-open connection waits forever otherwise): the session is destroyed, and that publish
 * and every other one pending fail with a {@link RabbitConnectionError}, an outage. @internal
 */
export class ConfirmedPublisher {
  private readonly pending = new Set<Pending>();
  private blocked: Promise<void> | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly session: AmqpSession,
    private readonly confirmTimeoutMs: number,
  ) {
    session.channel.on('return', (message: Message) => this.onReturn(message));
    // amqplib fails pending confirms when its channel closes; this covers any it misses.
    void session.whenLost.then((cause) => this.failPending(cause));
  }

  /** True while amqplib's write buffer is full: await {@link writable} before publishing. */
  get mustWait(): boolean {
    return this.blocked !== undefined || this.session.lost;
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
    return new Promise<void>((resolve, reject) => {
      this.send(exchange, routingKey, content, { ...options }, (error) => {
        if (error) reject(error);
        else resolve();
      });
    });
  }

  /**
   * {@link publish} without a promise, for batches: `done` is called once with the outcome
   * (at once, before this returns, when the channel is already gone). `options` is taken
   * over: `mandatory` is set on it.
   */
  send(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish,
    done: PublishDone,
  ): void {
    if (this.session.lost) {
      done(lostError());
      return;
    }
    const entry: Pending = {
      exchange,
      routingKey,
      messageId: typeof options.messageId === 'string' ? options.messageId : undefined,
      deadline: Date.now() + this.confirmTimeoutMs,
      settled: false,
      done,
    };
    this.pending.add(entry);
    this.armSweeper();
    const onConfirm = (error: unknown): void => {
      this.pending.delete(entry);
      if (entry.returned) settle(entry, entry.returned);
      else if (error) settle(entry, confirmError(error, exchange, routingKey));
      else settle(entry, undefined);
    };
    options.mandatory = true;
    let accepted: boolean;
    try {
      accepted = this.session.channel.publish(exchange, routingKey, content, options, onConfirm);
    } catch (error) {
      // amqplib throws synchronously when the channel is already closed.
      onConfirm(error);
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
  }

  private armSweeper(): void {
    if (this.sweeper) return;
    this.sweeper = setTimeout(() => {
      this.sweeper = undefined;
      const oldest = this.pending.values().next();
      if (!oldest.done && oldest.value.deadline <= Date.now()) {
        this.session.destroy(
          new RabbitConnectionError(
            `no publisher confirm within confirmTimeoutMs (${this.confirmTimeoutMs} ms); ` +
              'the connection is presumed dead and is reopened',
            { details: { confirmTimeoutMs: this.confirmTimeoutMs } },
          ),
        );
        return;
      }
      if (this.pending.size > 0) this.armSweeper();
    }, SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  /** Fails every publish still waiting for its confirm: the session is gone. */
  private failPending(cause: Error): void {
    const error =
      cause instanceof RabbitConnectionError
        ? cause
        : new RabbitConnectionError(`the channel closed before the confirm: ${cause.message}`, {
            cause,
          });
    for (const entry of this.pending) {
      // A late confirm from amqplib finds the entry settled and is ignored.
      settle(entry, entry.returned ?? withTarget(error, entry));
    }
    this.pending.clear();
  }

  private onReturn(message: Message): void {
    const { exchange, routingKey, replyCode, replyText } = message.fields as unknown as {
      exchange: string;
      routingKey: string;
      replyCode: number;
      replyText: string;
    };
    const property: unknown = message.properties.messageId;
    const messageId = typeof property === 'string' ? property : undefined;
    for (const entry of this.pending) {
      if (
        entry.returned === undefined &&
        entry.exchange === exchange &&
        entry.routingKey === routingKey &&
        entry.messageId === messageId
      ) {
        entry.returned = new UnroutableMessageError(
          `unroutable: exchange "${exchange}" routed routing key "${routingKey}" to no queue`,
          { exchange, routingKey, replyCode, replyText },
        );
        return;
      }
    }
  }
}

/** How often confirm deadlines are checked; a timeout fires up to this much late. */
const SWEEP_INTERVAL_MS = 250;

/** `error` with the publish's exchange and routing key in its details. */
function withTarget(error: RabbitConnectionError, entry: Pending): RabbitConnectionError {
  return new RabbitConnectionError(error.message, {
    cause: error.cause ?? error,
    details: { ...error.details, exchange: entry.exchange, routingKey: entry.routingKey },
  });
}

function lostError(): RabbitConnectionError {
  return new RabbitConnectionError('the channel is closed');
}

function confirmError(error: unknown, exchange: string, routingKey: string): Error {
  const message = errorMessage(error);
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
