/**
 * The span of an idempotent HTTP operation (`idempotent <operation>`, kind INTERNAL): a
 * child of the active span (the server span of an HTTP instrumentation), or else of the
 * context the request carries (`traceparent`), so the outbox's `create` spans of the
 * handler's events, and every span after them, share the request's trace. A replay is
 * marked `justonce.operation.replayed`; a handler's throw is the span's error.
 */
import { context, SpanKind, trace, type Span } from '@opentelemetry/api';
import { carriedContext, failSpan, inSpan, tracer } from '@justonce/core/transport';
import type { RequestView } from './fingerprint';
import { IDEMPOTENT_REPLAYED_HEADER, type HeldResponse } from './response';

/** What the engine decided, as much of it as the span records. */
type Decided =
  | { readonly kind: 'respond' | 'committed' | 'rolled-back'; readonly response: HeldResponse }
  | { readonly kind: 'threw'; readonly error: unknown };

function finish(span: Span, outcome: Decided): void {
  span.setAttribute('justonce.operation.outcome', outcome.kind);
  if (outcome.kind === 'threw') {
    span.setAttribute('justonce.operation.replayed', false);
    failSpan(span, outcome.error);
    return;
  }
  const { response } = outcome;
  span.setAttribute('http.response.status_code', response.status);
  span.setAttribute(
    'justonce.operation.replayed',
    response.headers.some(([name]) => name === IDEMPOTENT_REPLAYED_HEADER),
  );
}

/** Runs `decide` (the engine on one request) in the operation's span. @internal */
export function traceOperation<T extends Decided>(
  operation: string,
  view: RequestView,
  decide: () => Promise<T>,
): Promise<T> {
  const active = context.active();
  const parent =
    trace.getSpan(active) === undefined
      ? (carriedContext((name) => view.header(name)) ?? active)
      : active;
  const span = tracer().startSpan(
    `idempotent ${operation}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: { 'justonce.operation.name': operation, 'http.request.method': view.method },
    },
    parent,
  );
  return inSpan(span, decide, finish);
}
