import fc from 'fast-check';
import { context, propagation, ROOT_CONTEXT, trace, type Context } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { installTracing, type TestTracing } from '../../../../test-support/tracing';
import { fcRuns } from '../../../../test-support/fuzz';
import {
  carriedContext,
  headerLookup,
  injectSpan,
  messagingOption,
  startMessagingSpan,
  TRACER_VERSION,
} from './tracing';
import corePackage from '../../package.json';
import { ConfigurationError } from '../errors/configuration-error';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

/** Hexadecimal-looking text of up to `max` characters, upper case included (W3C refuses it). */
const hex = (max: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), maxLength: max });

function lookupOf(headers: Record<string, string>): (name: string) => string | undefined {
  return headerLookup(headers);
}

describe('tracing without an SDK (the API alone)', () => {
  it('starts non-recording spans and writes no header', () => {
    const span = startMessagingSpan('create', 'orders', { operationName: 'add' });
    expect(span.isRecording()).toBe(false);
    const headers: Record<string, string> = {};
    injectSpan(span, headers);
    span.end();
    expect(headers).toEqual({});
  });

  it('reads no context: no propagator is registered', () => {
    expect(carriedContext(lookupOf({ traceparent: TRACEPARENT }))).toBeUndefined();
  });
});

describe('tracing with an SDK', () => {
  let tracing: TestTracing;
  beforeAll(() => {
    tracing = installTracing();
  });
  afterAll(() => tracing.uninstall());

  it('registers its tracer with the package version', () => {
    expect(TRACER_VERSION).toBe(corePackage.version);
  });

  it('reads a carried traceparent, in any header case', () => {
    for (const name of ['traceparent', 'Traceparent', 'TRACEPARENT']) {
      const carried = carriedContext(lookupOf({ [name]: TRACEPARENT }));
      const span = carried === undefined ? undefined : trace.getSpanContext(carried);
      expect(span).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
    }
  });

  it('writes the span it was given, traceparent and tracestate through the propagator', () => {
    const parent = carriedContext(
      lookupOf({ traceparent: TRACEPARENT, tracestate: 'vendor=opaque' }),
    ) as Context;
    const span = startMessagingSpan('create', 'orders', { operationName: 'add', parent });
    const headers: Record<string, string> = {};
    injectSpan(span, headers);
    span.end();
    const { traceId, spanId } = span.spanContext();
    expect(traceId).toBe(TRACE_ID);
    // What the propagator reads back is the span itself: nothing parsed by hand.
    const back = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, headers));
    expect(back).toMatchObject({ traceId, spanId });
    expect(headers.tracestate).toBe('vendor=opaque');
  });

  it('names and kinds its spans by the messaging conventions', () => {
    const span = startMessagingSpan('process', 'orders', {
      system: 'kafka',
      operationName: 'process',
    });
    span.end();
    const done = tracing.spans().at(-1);
    expect(done?.name).toBe('process orders');
    expect(done?.kind).toBe(4); // CONSUMER
    expect(done?.attributes).toEqual({
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.system': 'kafka',
      'messaging.destination.name': 'orders',
    });
  });

  it('a malformed traceparent never throws: it starts a new trace', () => {
    const header = fc.oneof(
      fc.string(),
      fc.constant(TRACEPARENT),
      fc
        .tuple(
          fc.constantFrom('00', 'ff', '01', 'zz', ''),
          fc.oneof(hex(40), fc.constant('0'.repeat(32))),
          fc.oneof(hex(20), fc.constant('0'.repeat(16))),
          fc.constantFrom('00', '01', '1', 'xx', '01-extra'),
        )
        .map((parts) => parts.join('-')),
    );
    fc.assert(
      fc.property(header, fc.option(fc.string()), (traceparent, tracestate) => {
        const headers: Record<string, string> = { traceparent };
        if (tracestate !== null) headers.tracestate = tracestate;
        const carried = carriedContext(lookupOf(headers));
        const parent = carried ?? context.active();
        const span = startMessagingSpan('process', 'q', { operationName: 'process', parent });
        span.end();
        if (carried === undefined) {
          // A new trace: the span has no parent.
          expect(tracing.spans().at(-1)?.parentSpanContext).toBeUndefined();
        } else {
          expect(trace.isSpanContextValid(trace.getSpanContext(carried)!)).toBe(true);
        }
        tracing.exporter.reset();
      }),
      { numRuns: fcRuns(300) },
    );
  });

  it('a propagator that throws on the headers starts a new trace too', () => {
    propagation.disable();
    propagation.setGlobalPropagator({
      inject: () => undefined,
      extract: () => {
        throw new Error('broken propagator');
      },
      fields: () => ['traceparent'],
    });
    try {
      expect(carriedContext(lookupOf({ traceparent: TRACEPARENT }))).toBeUndefined();
    } finally {
      propagation.disable();
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    }
  });
});

describe('the messaging option of inbox.process', () => {
  it('takes a system, a destination and a consumer group, and refuses anything else by name', () => {
    const given = { system: 'kafka', consumerGroup: 'billing' };
    expect(messagingOption(given, 'inbox.process')).toBe(given);
    expect(messagingOption(undefined, 'inbox.process')).toBeUndefined();
    expect(() => messagingOption({ system: 'kafka', consumerGrop: 'x' }, 'inbox.process')).toThrow(
      /messaging\.consumerGrop.*consumerGroup/,
    );
    expect(() => messagingOption({ destination: 'q' }, 'inbox.process')).toThrow(
      'inbox.process: messaging.system must be a non-empty string',
    );
    expect(() => messagingOption('kafka', 'inbox.process')).toThrow(
      'inbox.process: messaging must be an object with a system',
    );
  });

  it('any value is either a valid messaging object or a ConfigurationError', () => {
    const field = fc.oneof(fc.string(), fc.constant(undefined), fc.integer(), fc.constant(null));
    const value = fc.oneof(
      fc.anything(),
      fc.record(
        { system: field, destination: field, consumerGroup: field, other: field },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(value, (given) => {
        let accepted: unknown;
        try {
          accepted = messagingOption(given, 'inbox.process');
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigurationError);
          return;
        }
        if (given === undefined) return;
        expect(accepted).toBe(given);
        const { system, destination, consumerGroup, ...rest } = given as Record<string, unknown>;
        expect(typeof system === 'string' && system !== '').toBe(true);
        for (const optional of [destination, consumerGroup]) {
          expect(optional === undefined || (typeof optional === 'string' && optional !== '')).toBe(
            true,
          );
        }
        expect(rest).toEqual({});
      }),
      { numRuns: fcRuns(500) },
    );
  });
});
