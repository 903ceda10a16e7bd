/**
 * The side-effect ledger's crash check (`ctx.once`), the same for every transport: a consumer
 * process whose step made its remote call is killed with SIGKILL before the call's record is
 * written (core's `once.after-effect` crash point); optionally a second one is killed after the
 * record, before its inbox transaction commits; then a consumer in the test's own process
 * finishes the message. The remote call must have been made exactly twice, both times with the
 * step's one idempotency key (the documented window: the first call's record was never
 * written, so a later delivery calls again, after the first one's lease), never a third time
 * (the record, once written, is replayed), and the business write must have committed once.
 */
import {
  createInbox,
  createOperations,
  onceKey,
  type Handler,
  type Inbox,
  type OperationsOptions,
} from '@justonce/core';
import { spawnCrashChild, type CrashJob, type CrashTransport } from './crash-child';
import {
  listEffects,
  remoteEffectKeys,
  writeEffect,
  writeRemoteEffect,
  type EffectsStore,
} from './effects';
import { waitFor } from './wait-for';

/** The step the children and the finishing consumer run. */
const STEP = 'charge';
/** The ledger's lease: how long a later delivery waits for a killed owner's record. */
const LEASE_MS = 1_500;

/** One transport's run of the check. */
export interface OnceCrashCase {
  readonly store: EffectsStore;
  readonly databaseUrl: string;
  /** The inbox consumer: fresh per test. */
  readonly consumer: string;
  /** The id of the one message the broker holds for the consumer. */
  readonly messageId: string;
  /** How the children get the message. */
  readonly transport: CrashTransport;
  /**
   * Starts a consumer in this process on the same message with this inbox and handler;
   * resolves to its stop.
   */
  readonly finish: (inbox: Inbox, handler: Handler) => Promise<() => Promise<void>>;
  /** Also kill a second child after the step's record was written, before its commit. */
  readonly afterRecord?: boolean;
  /** Waits until the broker (or inbox) will hand the message to a new process. */
  readonly afterKill?: () => Promise<void>;
}

/** The handler every process of the check runs: the step's remote call, then a business row. */
function onceHandler(store: EffectsStore, consumer: string): Handler {
  return async (ctx) => {
    await ctx.once(STEP, (key) => writeRemoteEffect(store, ctx.messageId, key, consumer));
    await writeEffect(ctx.trx, store, ctx.messageId, { consumer, note: 'finish' });
  };
}

async function businessRows(store: EffectsStore, consumer: string): Promise<number> {
  const rows = await listEffects(store, { consumer });
  return rows.filter((row) => row.note !== 'remote').length;
}

/** Runs the check (see the module's comment); fails the calling test when it does not hold. */
export async function checkOnceCrash(c: OnceCrashCase): Promise<void> {
  const { store, consumer, messageId } = c;
  const job = (extra: Partial<CrashJob>): CrashJob => ({
    databaseUrl: c.databaseUrl,
    schema: store.schema,
    consumer,
    transport: c.transport,
    once: { step: STEP, leaseMs: LEASE_MS, waitMs: 10_000 },
    ...extra,
  });
  const key = onceKey(
    { kind: 'inbox', namespace: consumer, scope: 'default', id: messageId },
    STEP,
  );

  const first = spawnCrashChild(job({ crashAt: 'once.after-effect' }));
  const { process: child } = first;
  await waitFor(
    'the first process to kill itself after its remote call',
    () => child.exitCode !== null || child.signalCode !== null,
    { timeoutMs: 60_000, intervalMs: 50 },
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}; stderr: ${first.stderr()}`);
  });
  expect((await first.exited).signal).toBe('SIGKILL');
  expect(await remoteEffectKeys(store, messageId)).toEqual([key]);
  expect(await businessRows(store, consumer)).toBe(0);
  await c.afterKill?.();

  if (c.afterRecord === true) {
    const second = spawnCrashChild(job({ stopAt: 'handler-done' }));
    await second.next('stopped', 60_000);
    expect(await second.kill()).toBe('SIGKILL');
    // It took over the lapsed lease and called again with the same key; its record is written.
    expect(await remoteEffectKeys(store, messageId)).toEqual([key, key]);
    expect(await businessRows(store, consumer)).toBe(0);
    await c.afterKill?.();
  }

  const ledgerOptions: Omit<OperationsOptions, 'store'> = {
    leaseMs: LEASE_MS,
    waitForInProgressMs: 10_000,
  };
  const inbox = createInbox({
    store,
    consumer,
    ledger: createOperations({ store, ...ledgerOptions }),
  });
  const stop = await c.finish(inbox, onceHandler(store, consumer));
  try {
    await waitFor(
      'the message to take effect',
      async () => (await businessRows(store, consumer)) > 0,
      {
        timeoutMs: 60_000,
        intervalMs: 100,
      },
    );
  } finally {
    await stop();
  }
  expect(await businessRows(store, consumer)).toBe(1);
  expect(await remoteEffectKeys(store, messageId)).toEqual([key, key]);
}
