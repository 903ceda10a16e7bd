/**
 * `pnpm bench inbox`: the inbox on real PostgreSQL against the same SQL statements written by
 * hand in a plain knex transaction, in the same process and the same run.
 *
 * Cases (every one with 8 workers, each taking the next unit of work from a shared list):
 * - per-message: `inbox.process` per delivery, beside the hand-written transaction the inbox
 *   issues for a first delivery (claim, business insert, commit).
 * - batch: `inbox.processBatch` of 100 per transaction, beside the hand-written transaction
 *   the inbox issues for a batch (one multi-row claim, the business inserts, the
 *   attempt-counter cleanup, commit).
 * - batch vs per-message: the inbox's batch throughput over its per-message throughput.
 *
 * Each case: a warm-up round, then BENCH_ROUNDS rounds (default 6) alternating which side
 * runs first; tables are truncated before every round. `perSec` and `baselinePerSec` are
 * medians over the rounds; `ratio` is the median of the per-round ratios (the two sides of a
 * round run back to back, so drift in the machine's load cancels out); the CPU figures are
 * this process's user + system time per message, which load on the machine affects less than
 * wall-clock time. The last line printed is the JSON result.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { createInbox, createStore, rowsOf, type Handler, type Store } from '@justonce/core';
import {
  benchMessages,
  benchRounds,
  type BenchMessage,
  handClaim,
  handClaimOne,
  INBOX_RETENTION_MS,
  median,
  timedWorkers,
} from './_support';

const WORKERS = 8;
const BATCH_SIZE = 100;
const PER_MESSAGE_COUNT = 2_000;
const BATCH_COUNT = 10_000;

type Message = BenchMessage;

interface Sides {
  readonly framework: () => Promise<void>;
  readonly baseline: () => Promise<void>;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs `work` on every unit with {@link WORKERS} workers; resolves to the elapsed seconds. */
function timed<T>(units: readonly T[], work: (unit: T) => Promise<void>): Promise<number> {
  return timedWorkers(units, WORKERS, work);
}

/** Runs the benchmark and prints its JSON line last. */
export async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const rounds = benchRounds();
  const schema = `bench_inbox_${randomBytes(4).toString('hex')}`;
  const store: Store = await createStore({
    connectionString: url,
    schema,
    pool: { max: WORKERS + 2 },
  });
  try {
    await store.migrate();
    const { names, knex } = store;
    const idempotency = names.table('idempotency');
    const attempts = names.table('inbox_attempts');
    const effects = names.table('bench_effects');
    await knex.raw(
      `create table ${effects} (message_id text not null, body_length integer not null)`,
    );

    const FRAMEWORK = 'bench-framework';
    const BASELINE = 'bench-baseline';
    const inbox = createInbox({ store, consumer: FRAMEWORK, retentionMs: INBOX_RETENTION_MS });
    const insertEffect = `insert into ${effects} (message_id, body_length) values (?, ?)`;
    const handler: Handler = async ({ trx, messageId, message }) => {
      await trx.raw(insertEffect, [messageId, message.body.length]);
    };
    const reset = async (): Promise<void> => {
      await knex.raw(`truncate ${idempotency}, ${attempts}, ${effects}`);
    };

    // The statements of processOne for a first delivery, by hand (inbox/sql/claim-messages.ts,
    // claimMessage): the claim, the handler's insert, commit. A first delivery skips the
    // attempt-counting statement, and so has no counter to clear.
    const baselineOne = async (m: Message): Promise<void> => {
      await knex.transaction(async (trx) => {
        if (await handClaimOne(trx, idempotency, BASELINE, INBOX_RETENTION_MS, m)) {
          await trx.raw(insertEffect, [m.id, m.envelope.body.length]);
        }
      });
    };

    // The statements of processBatch for first deliveries, by hand: the multi-row claim
    // (handClaim), the handlers' inserts, commit.
    const baselineBatch = async (batch: readonly Message[]): Promise<void> => {
      await knex.transaction(async (trx: Knex.Transaction) => {
        const claimed = await handClaim(trx, idempotency, BASELINE, INBOX_RETENTION_MS, batch);
        const done = batch.filter((m) => claimed.has(m.id));
        for (const m of done) await trx.raw(insertEffect, [m.id, m.envelope.body.length]);
      });
    };

    const perMessage = (msgs: readonly Message[]): Sides => ({
      framework: async () => {
        await timed(msgs, async (m) => {
          const outcome = await inbox.process(m.envelope, handler);
          if (outcome.status !== 'processed') throw new Error(`unexpected ${outcome.status}`);
        });
      },
      baseline: async () => {
        await timed(msgs, baselineOne);
      },
    });
    const batched = (msgs: readonly Message[]): Sides => {
      const batches = chunks(msgs, BATCH_SIZE);
      return {
        framework: async () => {
          await timed(batches, async (batch) => {
            const outcomes = await inbox.processBatch(
              batch.map((m) => m.envelope),
              handler,
            );
            if (outcomes.some((o) => o.status !== 'processed'))
              throw new Error('batch not processed');
          });
        },
        baseline: async () => {
          await timed(batches, baselineBatch);
        },
      };
    };

    /** One side's figures for one round. */
    interface Sample {
      readonly perSec: number;
      /** Node CPU time (user + system) per message, in microseconds. */
      readonly cpuUs: number;
    }
    const sample = async (count: number, run: () => Promise<void>): Promise<Sample> => {
      const cpu = process.cpuUsage();
      const started = performance.now();
      await run();
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      return { perSec: count / seconds, cpuUs: (used.user + used.system) / count };
    };

    /** Warm-up, then `rounds` rounds alternating which side goes first. */
    const measure = async (
      label: string,
      count: number,
      sides: (msgs: readonly Message[]) => Sides,
    ): Promise<{ framework: Sample[]; baseline: Sample[] }> => {
      const warm = sides(benchMessages(`${label}-warm`, Math.min(count, 1_000)));
      await reset();
      await warm.framework();
      await warm.baseline();
      const framework: Sample[] = [];
      const baseline: Sample[] = [];
      const run = sides(benchMessages(label, count));
      for (let r = 0; r < rounds; r += 1) {
        const order =
          r % 2 === 0 ? (['framework', 'baseline'] as const) : (['baseline', 'framework'] as const);
        for (const side of order) {
          await reset();
          (side === 'framework' ? framework : baseline).push(await sample(count, run[side]));
          const [row] = rowsOf<{ n: string }>(
            await knex.raw(`select count(*) as n from ${effects}`),
          );
          if (Number(row?.n) !== count) {
            throw new Error(`${label} ${side}: ${row?.n} effects, expected ${count}`);
          }
        }
        console.log(
          `  ${label} round ${r + 1}/${rounds}: inbox ${Math.round(framework[r]?.perSec ?? 0)}/s, ` +
            `hand-written ${Math.round(baseline[r]?.perSec ?? 0)}/s`,
        );
      }
      return { framework, baseline };
    };

    console.log(
      `inbox benchmark on PostgreSQL, ${WORKERS} workers, ${rounds} rounds after a warm-up ` +
        `(per-message ${PER_MESSAGE_COUNT}, batch ${BATCH_COUNT} messages per round)`,
    );
    const one = await measure('per-message', PER_MESSAGE_COUNT, perMessage);
    const many = await measure('batch', BATCH_COUNT, batched);

    const round2 = (x: number): number => Math.round(x * 100) / 100;
    const perSec = (samples: readonly Sample[]): number => median(samples.map((s) => s.perSec));
    const cpuUs = (samples: readonly Sample[]): number =>
      Math.round(median(samples.map((s) => s.cpuUs)));
    /** The median of the per-round ratios: each round's two sides ran back to back. */
    const pairedRatio = (a: readonly Sample[], b: readonly Sample[]): number =>
      round2(median(a.map((s, i) => s.perSec / (b[i] as Sample).perSec)));
    const versus = (name: string, m: { framework: Sample[]; baseline: Sample[] }) => ({
      case: name,
      perSec: Math.round(perSec(m.framework)),
      baselinePerSec: Math.round(perSec(m.baseline)),
      ratio: pairedRatio(m.framework, m.baseline),
      target: 0.9,
      cpuUsPerMessage: cpuUs(m.framework),
      baselineCpuUsPerMessage: cpuUs(m.baseline),
    });
    const results = [
      versus(`per-message (${WORKERS} concurrent) vs hand-written SQL`, one),
      versus(
        `batch (${BATCH_SIZE} per transaction, ${WORKERS} concurrent) vs hand-written SQL`,
        many,
      ),
      {
        case: 'batch vs per-message (inbox both)',
        perSec: Math.round(perSec(many.framework)),
        baselinePerSec: Math.round(perSec(one.framework)),
        ratio: round2(perSec(many.framework) / perSec(one.framework)),
        target: 5,
      },
    ];
    for (const r of results) {
      console.log(
        `${r.ratio >= r.target ? 'met   ' : 'MISSED'} ${r.case}: ${r.perSec}/s vs ` +
          `${r.baselinePerSec}/s, ratio ${r.ratio} (target >= ${r.target})` +
          ('cpuUsPerMessage' in r
            ? `; node CPU ${r.cpuUsPerMessage} vs ${r.baselineCpuUsPerMessage} us/message`
            : ''),
      );
    }
    console.log(JSON.stringify({ bench: 'inbox', results }));
  } finally {
    await store.knex.raw(`drop schema if exists "${schema}" cascade`);
    await store.close();
  }
}
