/**
 * justonce's spans, by the OpenTelemetry semantic conventions for messaging, on
 * `@opentelemetry/api` alone: without a registered SDK every span is a no-op; beyond a span's
 * name and the attributes samplers read at its start, nothing is computed or written unless
 * the span records (`isRecording()`). The trace context travels in the message headers
 * through the application's registered propagator (W3C `traceparent`/`tracestate` with the
 * SDK's defaults): nothing here parses it. docs/observability.md lists every span.
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import { optionKeys, rejectUnknownOptions } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { METER_NAME } from './metrics';

/** The instrumentation scope of justonce's spans: the meter's name. */
export const TRACER_NAME = METER_NAME;
/** The version the tracer is registered with (`@justonce/core`'s). */
export const TRACER_VERSION = '0.1.0';

/** What a messaging span is about: the conventions' operation types. */
export type MessagingOperation = 'create' | 'send' | 'process';

/**
 * The broker a transport speaks, for the `process` span of each delivery it hands the inbox
 * (`InboxProcessOptions.messaging`).
 */
export interface MessagingSystem {
  /** `messaging.system`: `kafka`, `aws_sqs`, `rabbitmq`, or the broker's own name. */
  readonly system: string;
  /**
   * `messaging.destination.name` when it is not the delivery's `source` (SQS gives the
   * queue's name here; its deliveries' source is the queue URL).
   */
  readonly destination?: string;
  /** `messaging.consumer.group.name` (a Kafka consumer group). */
  readonly consumerGroup?: string;
}

const MESSAGING_KEYS = optionKeys<MessagingSystem>()(['system', 'destination', 'consumerGroup']);
/** Objects already checked: a transport passes the same one with every delivery. */
const CHECKED = new WeakSet<object>();

/**
 * The `messaging` option of `inbox.process` and `processBatch` (`context` names the call),
 * checked: an object with a non-empty `system` and, if given, string `destination` and
 * `consumerGroup`, and nothing else; else a {@link ConfigurationError}. Each object is
 * checked once.
 */
export function messagingOption(value: unknown, context: string): MessagingSystem | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(`${context}: messaging must be an object with a system`, {
      given: Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value,
    });
  }
  if (CHECKED.has(value)) return value as MessagingSystem;
  rejectUnknownOptions(value, MESSAGING_KEYS, context, 'messaging');
  const given = value as Partial<Record<keyof MessagingSystem, unknown>>;
  for (const name of MESSAGING_KEYS) {
    const field = given[name];
    const required = name === 'system';
    if (required || field !== undefined) {
      if (typeof field !== 'string' || field === '') {
        throw new ConfigurationError(`${context}: messaging.${name} must be a non-empty string`, {
          [name]: typeof field,
        });
      }
    }
  }
  CHECKED.add(value);
  return value as MessagingSystem;
}

let cachedTracer: Tracer | undefined;

/**
 * The one tracer of justonce. The API's proxy follows a provider registered later, so the
 * first call may come before the application installs its SDK.
 */
export function tracer(): Tracer {
  cachedTracer ??= trace.getTracer(TRACER_NAME, TRACER_VERSION);
  return cachedTracer;
}

/** Reads a header through a lookup, the way the propagator asks for it. */
const LOOKUP_GETTER: TextMapGetter<(name: string) => string | undefined> = {
  get: (lookup, key) => lookup(key),
  keys: () => [],
};

/**
 * The trace context a message (or request) carries, as the registered propagator reads it
 * from `lookup` (a header by its lower-case name); `undefined` when it carries none that is
 * valid. Never throws: a malformed `traceparent` (or a propagator that throws on it) starts
 * a new trace instead.
 */
export function carriedContext(lookup: (name: string) => string | undefined): Context | undefined {
  let extracted: Context;
  try {
    extracted = propagation.extract(ROOT_CONTEXT, lookup, LOOKUP_GETTER);
  } catch {
    return undefined;
  }
  const span = trace.getSpanContext(extracted);
  return span !== undefined && trace.isSpanContextValid(span) ? extracted : undefined;
}

/** A header of a message, by its name in any case. */
export function headerLookup(
  headers: Readonly<Record<string, string>>,
): (name: string) => string | undefined {
  return (name) => {
    const direct = Object.hasOwn(headers, name) ? headers[name] : undefined;
    if (typeof direct === 'string') return direct;
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === name && typeof value === 'string') return value;
    }
    return undefined;
  };
}

/**
 * Writes the context of `span` into `headers` through the registered propagator (W3C
 * `traceparent`, and `tracestate` when there is one). Nothing when the span is not recording.
 */
export function injectSpan(span: Span, headers: Record<string, string>): void {
  if (!span.isRecording()) return;
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers);
}

/** The link to a carried context, or none. */
export function linksTo(carried: Context | undefined): Link[] | undefined {
  const span = carried === undefined ? undefined : trace.getSpanContext(carried);
  return span === undefined ? undefined : [{ context: span }];
}

/**
 * Starts a messaging span, `<operation> <destination>`, of the conventions' kind (PRODUCER
 * for `create` and `send`, CONSUMER for `process`) under `parent` (the active context when
 * none), with the attributes samplers may read at its start. The caller adds the rest only
 * when the span is recording.
 */
export function startMessagingSpan(
  operation: MessagingOperation,
  destination: string | undefined,
  options: {
    readonly system?: string;
    readonly operationName: string;
    readonly parent?: Context;
    readonly links?: Link[];
  },
): Span {
  const attributes: Attributes = {
    'messaging.operation.type': operation,
    'messaging.operation.name': options.operationName,
  };
  if (options.system !== undefined) attributes['messaging.system'] = options.system;
  if (destination !== undefined) attributes['messaging.destination.name'] = destination;
  return tracer().startSpan(
    destination === undefined ? operation : `${operation} ${destination}`,
    {
      kind: operation === 'process' ? SpanKind.CONSUMER : SpanKind.PRODUCER,
      attributes,
      ...(options.links === undefined ? {} : { links: options.links }),
    },
    options.parent ?? context.active(),
  );
}

/** Marks a span failed by `error`: the exception recorded, status ERROR, `error.type`. */
export function failSpan(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  const failure = error instanceof Error ? error : new Error(String(error));
  span.recordException(failure);
  const code = (failure as { code?: unknown }).code;
  span.setAttribute('error.type', typeof code === 'string' ? code : failure.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
}

/** Runs `fn` with `span` the active span (so spans started inside are its children). */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/**
 * Runs `fn` in a span started by `start`, active while it runs; a throw fails the span (and
 * is rethrown), `finish` may add what the result says before the span ends.
 */
export async function inSpan<T>(
  span: Span,
  fn: () => Promise<T>,
  finish?: (span: Span, result: T) => void,
): Promise<T> {
  try {
    const result = await withSpan(span, fn);
    if (finish !== undefined && span.isRecording()) finish(span, result);
    return result;
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}
