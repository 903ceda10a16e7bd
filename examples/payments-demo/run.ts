/**
 * The payments demo: a consumer charges one payment per message, through justonce's inbox,
 * while the in-memory broker duplicates messages, hands some to two handlers at once,
 * crashes the consumer at every named point and feeds it one poison message. At the end,
 * the payments table must hold exactly one charge per message that could be handled.
 */
import { randomBytes } from 'node:crypto';
import {
  ConfigurationError,
  createInbox,
  createStore,
  rowsOf,
  type Handler,
  type Store,
} from '@justonce/core';
import {
  CRASH_POINTS,
  createMemoryBroker,
  pickDistinct,
  seededRandom,
  type CrashPoint,
  type DeliveryRecord,
} from '@justonce/core/testing';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Unique messages to publish. Default 1 000. */
  readonly messages?: number;
  /** PostgreSQL to run on; PGlite (embedded, in memory) when omitted. */
  readonly databaseUrl?: string;
  /** Seed of every random choice, so a run can be replayed. Default 2024. */
  readonly seed?: number;
  /** Handlers running at once. Default 8. */
  readonly concurrency?: number;
  /** Share of messages delivered once more after they were acknowledged. Default 0.2. */
  readonly duplicateRate?: number;
  /** Share of messages handed to two handlers at the same time. Default 0.05. */
  readonly concurrentRate?: number;
  /** Messages crashed at each crash point. Default 2. */
  readonly crashesPerPoint?: number;
  /** Called as messages finish, for a progress display. */
  readonly onProgress?: (progress: DemoProgress) => void;
}

/** How far a run is. */
export interface DemoProgress {
  /** Unique messages settled for good (charged or dead-lettered). */
  readonly done: number;
  readonly total: number;
  /** Deliveries so far, duplicates and redeliveries included. */
  readonly deliveries: number;
}

/** One check of the run's invariants. */
export interface DemoCheck {
  readonly name: string;
  readonly ok: boolean;
}

/** The figures of one run. */
export interface DemoResult {
  /** Where the store ran. */
  readonly database: 'pglite' | 'postgres';
  /** Unique messages published. */
  readonly uniqueMessages: number;
  /** Deliveries made, duplicates and redeliveries included. */
  readonly delivered: number;
  /** Extra copies the broker injected after a message was acknowledged. */
  readonly duplicatesInjected: number;
  /** Messages handed to two handlers at once. */
  readonly concurrentInjected: number;
  /** Deliveries the inbox recognised as already handled and acknowledged without effect. */
  readonly duplicatesSuppressed: number;
  /** Crashes that fired, per crash point. */
  readonly crashes: Readonly<Record<CrashPoint, number>>;
  /** Deliveries that failed and were retried (the poison message's attempts). */
  readonly retries: number;
  /** Rows in the payments table: the business effects that committed. */
  readonly effectsCommitted: number;
  /** Distinct message ids in the payments table. */
  readonly messagesCharged: number;
  /** Messages dead-lettered (the broker's dead-letter list). */
  readonly deadLetters: number;
  /** Dead letters recorded in the store for the consumer. */
  readonly deadLettersInStore: number;
  /** Wall-clock time from the first publish until idle, in milliseconds. */
  readonly elapsedMs: number;
  /** Time to open and migrate the store before that, in milliseconds. */
  readonly setupMs: number;
  /** Each invariant and whether it held. */
  readonly checks: readonly DemoCheck[];
  /** True when every check held. */
  readonly ok: boolean;
}

const CONSUMER = 'payments';
const QUEUE = 'payments';

interface Charge {
  readonly account: string;
  readonly amountCents: number;
}

function checkOption(
  name: string,
  value: number,
  min: number,
  max: number,
  integer = true,
): number {
  if (
    typeof value !== 'number' ||
    !(value >= min && value <= max) ||
    (integer && !Number.isInteger(value))
  ) {
    throw new ConfigurationError(
      `${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`,
      {
        [name]: value,
      },
    );
  }
  return value;
}

async function openStore(
  databaseUrl: string | undefined,
): Promise<{ store: Store; drop: () => Promise<void> }> {
  if (databaseUrl === undefined) {
    const store = await createStore({ pglite: {}, schema: 'payments_demo' });
    return { store, drop: async () => undefined };
  }
  // A schema of its own per run, dropped at the end, so runs never see each other's rows.
  const schema = `payments_demo_${randomBytes(4).toString('hex')}`;
  const store = await createStore({ connectionString: databaseUrl, schema, pool: { max: 12 } });
  return {
    store,
    drop: async () => void (await store.knex.raw(`drop schema if exists "${schema}" cascade`)),
  };
}

async function countOf(
  store: Store,
  sql: string,
  bindings: readonly string[] = [],
): Promise<number> {
  const [row] = rowsOf<{ n: string | number }>(await store.knex.raw(sql, bindings));
  return Number(row?.n ?? 0);
}

/**
 * Runs the demo and returns its figures. It never throws for a broken invariant: `ok` and
 * `checks` say whether the run held.
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const total = checkOption('messages', options.messages ?? 1_000, 10, 1_000_000);
  const seed = checkOption('seed', options.seed ?? 2024, 0, Number.MAX_SAFE_INTEGER);
  const concurrency = checkOption('concurrency', options.concurrency ?? 8, 1, 256);
  const duplicateRate = checkOption('duplicateRate', options.duplicateRate ?? 0.2, 0, 1, false);
  const concurrentRate = checkOption('concurrentRate', options.concurrentRate ?? 0.05, 0, 1, false);
  const crashesPerPoint = checkOption('crashesPerPoint', options.crashesPerPoint ?? 2, 0, 100);
  const random = seededRandom(seed);

  const opened = performance.now();
  const { store, drop } = await openStore(options.databaseUrl);
  const payments = store.names.table('payments');
  const broker = createMemoryBroker({ seed, crashRedeliveryDelayMs: 2, maxRetryDelayMs: 20 });
  try {
    await store.migrate();
    // No unique index on message_id on purpose: a charge made twice would show as two rows.
    await store.knex.raw(
      `create table if not exists ${payments} (
         id bigint generated always as identity primary key,
         message_id text not null,
         account text not null,
         amount_cents integer not null,
         charged_at timestamptz not null default now()
       )`,
    );

    const inbox = createInbox({
      store,
      consumer: CONSUMER,
      maxAttempts: 5,
      onStep: broker.onStep,
      decode: (body) =>
        JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body)) as unknown,
    });
    const charge: Handler<number> = async ({ trx, messageId, payload }) => {
      const { account, amountCents } = payload as Charge;
      if (!Number.isInteger(amountCents)) {
        // A bug the message trips every time: retried, then dead-lettered.
        throw new TypeError(`amountCents is not an integer: ${JSON.stringify(amountCents)}`);
      }
      await trx.raw(
        `insert into ${payments} (message_id, account, amount_cents) values (?, ?, ?)`,
        [messageId, account, amountCents],
      );
      return amountCents;
    };

    const ids = Array.from({ length: total }, (_, i) => `pay-${String(i + 1).padStart(7, '0')}`);
    const poisonId = ids[Math.floor(random() * total)] as string;
    const healthy = ids.filter((id) => id !== poisonId);
    for (const id of pickDistinct(healthy, Math.round(total * duplicateRate), random)) {
      broker.faults.duplicate(id);
    }
    for (const id of pickDistinct(healthy, Math.round(total * concurrentRate), random)) {
      broker.faults.concurrent(id);
    }
    const crashTargets = pickDistinct(healthy, crashesPerPoint * CRASH_POINTS.length, random);
    CRASH_POINTS.forEach((point, p) => {
      for (const id of crashTargets.slice(p * crashesPerPoint, (p + 1) * crashesPerPoint)) {
        broker.faults.crash(point, id);
      }
    });

    const setupMs = performance.now() - opened;
    const finished = new Set<string>();
    const stopProgress = broker.onDelivery((record: DeliveryRecord) => {
      if (record.acked && record.messageId !== undefined) finished.add(record.messageId);
      options.onProgress?.({ done: finished.size, total, deliveries: broker.stats().deliveries });
    });

    const started = performance.now();
    await broker.consume(QUEUE, { inbox, handler: charge, concurrency }).start();
    broker.send(
      QUEUE,
      ids.map((id) => {
        const body: Charge | { account: string; amountCents: string } =
          id === poisonId
            ? { account: 'acct-poison', amountCents: 'twelve' }
            : {
                account: `acct-${Math.floor(random() * 50)}`,
                amountCents: 100 + Math.floor(random() * 9_900),
              };
        return { id, body: JSON.stringify(body) };
      }),
    );
    await broker.whenIdle({ timeoutMs: Math.max(60_000, total * 50) });
    const elapsedMs = performance.now() - started;
    stopProgress();

    const stats = broker.stats(QUEUE);
    const injected = broker.injected();
    const effectsCommitted = await countOf(store, `select count(*) as n from ${payments}`);
    const messagesCharged = await countOf(
      store,
      `select count(distinct message_id) as n from ${payments}`,
    );
    const deadLettersInStore = await countOf(
      store,
      `select count(*) as n from ${store.names.table('dead_letters')} where consumer = ?`,
      [CONSUMER],
    );
    const deadLetters = broker.deadLetters(QUEUE);
    const expectedEffects = total - 1;
    const checks: DemoCheck[] = [
      {
        name: `effects committed (${effectsCommitted}) == unique messages (${total}) - dead letters (1)`,
        ok: effectsCommitted === expectedEffects,
      },
      { name: 'no message charged twice', ok: messagesCharged === effectsCommitted },
      {
        name: 'the poison message, and only it, was dead-lettered',
        ok:
          deadLetters.length === 1 &&
          deadLetters[0]?.message.id === poisonId &&
          deadLettersInStore === 1,
      },
      {
        name: `every crash point fired ${crashesPerPoint} time(s)`,
        ok: CRASH_POINTS.every((point) => injected.crashes[point] === crashesPerPoint),
      },
      {
        name: 'nothing left in flight or queued',
        ok: stats.ready + stats.inFlight + stats.scheduled === 0,
      },
    ];
    return {
      database: store.dialect,
      uniqueMessages: total,
      delivered: stats.deliveries,
      duplicatesInjected: injected.duplicates,
      concurrentInjected: injected.concurrent,
      duplicatesSuppressed: stats.duplicates,
      crashes: injected.crashes,
      retries: stats.failed,
      effectsCommitted,
      messagesCharged,
      deadLetters: deadLetters.length,
      deadLettersInStore,
      elapsedMs,
      setupMs,
      checks,
      ok: checks.every((c) => c.ok),
    };
  } finally {
    await broker.close();
    try {
      await drop();
    } finally {
      await store.close();
    }
  }
}
