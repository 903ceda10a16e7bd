import { bindOutbox } from '../outbox/create-outbox';
import type { HandlerOutbox } from '../outbox/types';
import { bindOnce } from '../operations/once/bind';
import type { Once } from '../operations/once/types';
import type { SqlTransaction } from '../transactions/types';
import type { GoodDelivery } from './inspect-envelope';
import type { ResolvedInboxOptions } from './options';
import type { HandlerContext } from './types';

function header(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  const direct = headers[name];
  if (typeof direct === 'string') return direct;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && typeof value === 'string') return value;
  }
  return undefined;
}

/**
 * The context a handler runs with. `ctx.outbox` is bound on first use to the transaction and to this
 * message, so emitted events get ids derived from (consumer, message id, index) and carry
 * causation, correlation, trace and tenant headers. A class rather than an object literal:
 * a literal with a getter is built on V8's slow path, once per message.
 */
class Context implements HandlerContext<unknown> {
  readonly message: GoodDelivery['envelope'];
  readonly messageId: string;
  readonly scope: string;
  // Private fields, so a handler sees only the context's own members.
  readonly #options: ResolvedInboxOptions;
  readonly #good: GoodDelivery;
  readonly #tx: SqlTransaction;
  #outbox: HandlerOutbox | undefined;
  #once: Once | undefined;

  constructor(
    options: ResolvedInboxOptions,
    readonly trx: unknown,
    tx: SqlTransaction,
    good: GoodDelivery,
    readonly payload: unknown,
    readonly attempt: number,
    readonly signal: AbortSignal,
  ) {
    this.#options = options;
    this.#good = good;
    this.#tx = tx;
    this.message = good.envelope;
    this.messageId = good.messageId;
    this.scope = good.scope;
  }

  get outbox(): HandlerOutbox {
    const options = this.#options;
    const good = this.#good;
    this.#outbox ??= bindOutbox(options.outbox, this.trx, this.#tx, {
      consumer: options.consumer,
      messageId: good.messageId,
      scope: good.scope,
      correlationId: header(good.headers, 'correlation-id'),
      traceparent: header(good.headers, 'traceparent'),
      tracestate: header(good.headers, 'tracestate'),
    });
    return this.#outbox;
  }

  get once(): Once {
    const good = this.#good;
    this.#once ??= bindOnce(
      this.#options.ledger,
      { kind: 'inbox', namespace: this.#options.consumer, scope: good.scope, id: good.messageId },
      // A step's record answers as long as the message's own: the broker may redeliver that long.
      { retentionMs: this.#options.retentionMs, signal: this.signal },
    );
    return this.#once;
  }
}

/** The context for one handler run (see {@link Context}). @internal */
export function handlerContext(
  options: ResolvedInboxOptions,
  trx: unknown,
  tx: SqlTransaction,
  good: GoodDelivery,
  payload: unknown,
  attempt: number,
  signal: AbortSignal,
): HandlerContext<unknown> {
  return new Context(options, trx, tx, good, payload, attempt, signal);
}
