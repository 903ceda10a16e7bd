import type { Knex } from 'knex';
import { bindOutbox } from '../outbox';
import type { HandlerOutbox } from '../outbox/types';
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
 * The context a handler runs with. `ctx.outbox` is bound on first use to `trx` and to this
 * message, so emitted events get ids derived from (consumer, message id, index) and carry
 * causation, correlation, trace and tenant headers. @internal
 */
export function handlerContext(
  options: ResolvedInboxOptions,
  trx: Knex.Transaction,
  good: GoodDelivery,
  payload: unknown,
  attempt: number,
  signal: AbortSignal,
): HandlerContext {
  let outbox: HandlerOutbox | undefined;
  return {
    trx,
    message: good.envelope,
    messageId: good.messageId,
    scope: good.scope,
    attempt,
    signal,
    payload,
    get outbox(): HandlerOutbox {
      outbox ??= bindOutbox(options.outbox, trx, {
        consumer: options.consumer,
        messageId: good.messageId,
        scope: good.scope,
        correlationId: header(good.headers, 'correlation-id'),
        traceparent: header(good.headers, 'traceparent'),
        tracestate: header(good.headers, 'tracestate'),
      });
      return outbox;
    },
  };
}
