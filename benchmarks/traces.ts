/**
 * `pnpm bench traces`: what recording spans costs. The inbox handles deliveries on real
 * PostgreSQL (`inbox.process`, a handler that adds one event through `ctx.outbox`: one
 * `process` and one `create` span per message), with an OpenTelemetry SDK whose sampler
 * records every span (a batch span processor, an exporter that drops them), beside the same
 * work with the same SDK sampling every span out, which is what the code pays when no trace
 * is recorded (each step checks `span.isRecording()` before building anything).
 *
 * Cases: per message, 8 workers; and batches of 50 (`inbox.processBatch`: one batch span and
 * one span per message). Each case: a warm-up round, then BENCH_ROUNDS rounds (default 6)
 * alternating which side runs first, on fresh ids. `ratio` is the recording side's rate over
 * the sampled-out side's, the median of the rounds' ratios; each side's cost per message
 * (_support.ts, costMeter) is the median over the rounds. The last line printed is the JSON
 * result.
 */
import { randomBytes } from 'node:crypto';
import { propagation, context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SamplingDecision,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { createInbox, createStore, type Envelope, type Inbox } from '@justonce/core';
import {
  benchRounds,
  costMeter,
  measureCases,
  printCostTable,
  timedWorkers,
  wantedCases,
  type Case,
  type Run,
} from './_support';

const MESSAGES = 2_000;
const WORKERS = 8;
const BATCH = 50;
const MESSAGING = { system: 'kafka', consumerGroup: 'bench' } as const;

/** Whether the sampler records: the one switch between the two sides. */
let recording = false;

function installSdk(): BasicTracerProvider {
  const sampler: Sampler = {
    shouldSample: () => ({
      decision: recording ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
    }),
    toString: () => 'bench',
  };
  const dropping: SpanExporter = {
    export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
    shutdown: () => Promise.resolve(),
  };
  const provider = new BasicTracerProvider({
    sampler,
    spanProcessors: [new BatchSpanProcessor(dropping)],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return provider;
}

/** Deliveries carrying a producer's `traceparent`, as a relay sends them. */
function deliveries(count: number): Envelope[] {
  const tag = randomBytes(4).toString('hex');
  const headers: Record<string, string> = {};
  const producer = trace.wrapSpanContext({
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    traceFlags: 1,
  });
  propagation.inject(trace.setSpan(ROOT_CONTEXT, producer), headers);
  return Array.from({ length: count }, (_, i) => ({
    id: `${tag}-${i}`,
    headers,
    body: JSON.stringify({ n: i }),
    delivery: { source: 'orders', partition: 0, offset: String(i) },
  }));
}

function side(
  records: boolean,
  run: (envelopes: readonly Envelope[]) => Promise<number>,
): () => Promise<Run> {
  return async () => {
    recording = records;
    const envelopes = deliveries(MESSAGES);
    const meter = costMeter();
    const seconds = await run(envelopes);
    return { perSec: MESSAGES / seconds, ...meter(MESSAGES) };
  };
}

function cases(inbox: Inbox): Case[] {
  const handler = async (ctx: Parameters<Parameters<Inbox['process']>[1]>[0]): Promise<void> => {
    await ctx.outbox.add({ destination: 'invoices', payload: { of: ctx.messageId } });
  };
  const perMessage = (envelopes: readonly Envelope[]): Promise<number> =>
    timedWorkers(envelopes, WORKERS, async (envelope) => {
      await inbox.process(envelope, handler, { messaging: MESSAGING });
    });
  const batches = (envelopes: readonly Envelope[]): Promise<number> => {
    const chunks = Array.from({ length: Math.ceil(envelopes.length / BATCH) }, (_, i) =>
      envelopes.slice(i * BATCH, (i + 1) * BATCH),
    );
    return timedWorkers(chunks, WORKERS, async (chunk) => {
      await inbox.processBatch(chunk, handler, { messaging: MESSAGING });
    });
  };
  return [
    ['per message, recording vs sampled out', side(true, perMessage), side(false, perMessage)],
    [`batches of ${BATCH}, recording vs sampled out`, side(true, batches), side(false, batches)],
  ];
}

/** Runs the benchmark and prints its JSON line last. */
export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_traces_${randomBytes(4).toString('hex')}`;
  const store = await createStore({ connectionString: url, schema, pool: { max: WORKERS + 2 } });
  const provider = installSdk();
  try {
    await store.migrate();
    const inbox = createInbox({ store, consumer: 'bench' });
    const results = await measureCases(
      benchRounds(),
      cases(inbox),
      wantedCases('BENCH_TRACES_CASES'),
    );
    printCostTable(results);
    console.log(JSON.stringify({ bench: 'traces', results }));
  } finally {
    await provider.shutdown();
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await store.close();
  }
}
