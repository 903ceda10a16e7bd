/**
 * An OpenTelemetry trace SDK for the tracing tests: a tracer provider exporting to memory,
 * the async-hooks context manager (so spans started in a handler find their parent) and the
 * W3C trace-context propagator, registered globally as an application's SDK setup would.
 * Tests only: the packages depend on `@opentelemetry/api` alone.
 */
import { context, propagation, trace, type SpanContext } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/** The registered SDK and what it exported. */
export interface TestTracing {
  readonly exporter: InMemorySpanExporter;
  /** The finished spans, oldest first. */
  spans(): ReadableSpan[];
  /** Unregisters the provider, context manager and propagator. */
  uninstall(): Promise<void>;
}

/** Registers the SDK globally (once per test file). */
export function installTracing(): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    uninstall: async () => {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** The span's parent's span id, if it has a parent. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** The span contexts a span links to. */
export function linkedTo(span: ReadableSpan): SpanContext[] {
  return span.links.map((link) => link.context);
}
