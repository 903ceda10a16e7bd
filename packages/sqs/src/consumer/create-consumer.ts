import {
  ChangeMessageVisibilityCommand,
  ReceiveMessageCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import {
  ConfigurationError,
  createInbox,
  fullJitterBackoff,
  type Inbox,
  type InboxOutcome,
} from '@justonce/core';
import { resolveClient } from '../client';
import { toEnvelope, type EnvelopeSettings } from '../envelope';
import { SqsDeadLetterError } from '../errors/dead-letter-error';
import { SqsStateError } from '../errors/state-error';
import { Permits } from '../limiter';
import { OutageNotice } from '../outage-notice';
import { errorName } from '../request-errors';
import { sleep } from '../sleep';
import { timeLimited } from '../time-limits';
import { forwardToDeadLetterQueue } from './dead-letter';
import { Deleter } from './deleter';
import { Heartbeat } from './heartbeat';
import type { HeldMessage } from './held-message';
import { createWorkerInstruments, type WorkerInstruments } from './instruments';
import { GroupLanes } from './lanes';
import { MAX_VISIBILITY_SECONDS, resolveWorkerOptions } from './options';
import { describeQueue } from './queue-info';
import { isStoreUnavailable, STORE_OUTAGE_BACKOFF_CAP_MS } from './store-outage';
import type {
  SqsQueueInfo,
  SqsSettledEvent,
  SqsStopOptions,
  SqsWorker,
  SqsWorkerAction,
  SqsWorkerOptions,
} from './types';

/** Messages one `ReceiveMessage` call returns at most. */
const RECEIVE_BATCH = 10;
/** Backoff between failed receives: capped low, so polling resumes soon after a heal. */
const RECEIVE_BACKOFF = { baseMs: 200, capMs: 5_000 } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** Everything `start` sets up. */
interface Running {
  readonly info: SqsQueueInfo;
  readonly inbox: Inbox;
  readonly visibilityTimeoutSeconds: number;
  readonly heartbeat: Heartbeat | undefined;
  readonly deleter: Deleter;
  readonly lanes: GroupLanes;
  readonly envelopeSettings: EnvelopeSettings;
}

function toSeconds(ms: number): number {
  return Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(ms / 1000)));
}

function receiveCountOf(message: Message): number {
  const n = Number(message.Attributes?.ApproximateReceiveCount);
  return Number.isInteger(n) && n > 0 ? n : 1;
}

/**
 * Creates an SQS worker: long polling with a concurrency limit, each message handled
 * through the inbox, so its effect commits once per message id however often SQS delivers
 * it. Options are validated here (a {@link ConfigurationError} for anything that cannot
 * work); what depends on the queue is checked by `start`.
 *
 * What happens to a message, by the inbox's outcome:
 * - `processed`, `duplicate` — deleted (`DeleteMessageBatch`), only after the transaction
 *   committed.
 * - `failed` — made visible again after the retry delay (`ChangeMessageVisibility`).
 * - `dead-lettered` — sent to the dead-letter queue when there is one, then deleted; the
 *   store holds the dead letter either way.
 * - the store is unavailable (`process` throws `STORE_UNAVAILABLE`) — kept in flight by the
 *   heartbeat and tried again in-process with backoff until the store answers, so SQS's
 *   receive count does not rise; released at `stop`.
 * - `process` throws anything else — made visible again after a backoff.
 *
 * Every SQS call is time-limited (`timeouts`); an outage (a timeout, a lost connection, the
 * queue missing) is logged once, retried with capped backoff, and logged when it ends.
 *
 * While a message is held its visibility timeout is extended (the heartbeat); the
 * extension stops when its handler ends. On a FIFO queue, messages of one group are handled
 * one at a time in the order received; when one is held back for a retry, the group's later
 * messages in hand are released behind it.
 *
 * @example
 * ```ts
 * const worker = createSqsWorker({
 *   clientConfig: { region: 'eu-west-1' },
 *   queueUrl,
 *   inbox: { store, consumer: 'billing' },
 *   decode: (body) => JSON.parse(String(body)),
 *   handler: async ({ trx, payload }) => {
 *     await trx('invoices').insert({ order_id: (payload as { orderId: string }).orderId });
 *   },
 * });
 * await worker.start();
 * process.once('SIGTERM', () => void worker.stop());
 * ```
 */
export function createSqsWorker<R = unknown>(options: SqsWorkerOptions<R>): SqsWorker {
  const o = resolveWorkerOptions(options);
  const { client, owned } = resolveClient(options, 'createSqsWorker', o.timeouts);
  const { logger, queueUrl } = o;
  const { requestMs } = o.timeouts;
  // The long poll waits up to waitTimeSeconds by design: its limit comes on top of that.
  const receiveLimitMs = requestMs > 0 ? o.waitTimeSeconds * 1000 + requestMs : 0;
  const receiveOutage = new OutageNotice(logger, { queueUrl, limitMs: receiveLimitMs });
  const storeOutage = new OutageNotice(logger, { queueUrl });
  const storeBackoff = {
    baseMs: Math.max(100, o.retry.baseMs),
    capMs: Math.max(100, Math.min(o.retry.capMs, STORE_OUTAGE_BACKOFF_CAP_MS)),
  };
  const instruments: WorkerInstruments = createWorkerInstruments(o.meter, queueUrl);
  const held = new Map<number, HeldMessage>();
  const tasks = new Set<Promise<void>>();
  const receiveAbort = new AbortController();
  // Up to `prefetch` messages beyond `concurrency` are received ahead, so handlers do not
  // wait for a long poll; a poller receives only when a whole batch of that many fits.
  const prefetch = Math.min(RECEIVE_BATCH, o.concurrency);
  const permits = new Permits(o.concurrency + prefetch);
  const handlerSlots = new Permits(o.concurrency);
  // In batch mode a receive batch is handled as one unit, so it must fit the handler slots.
  const receiveBatch = o.mode === 'batch' ? Math.min(RECEIVE_BATCH, o.concurrency) : RECEIVE_BATCH;
  let state: State = 'new';
  let run: Running | undefined;
  let pollers: Promise<void>[] = [];
  let startPromise: Promise<void> | undefined;
  let stopPromise: Promise<void> | undefined;
  let seq = 0;

  const emit = (event: SqsSettledEvent<R>) => {
    if (o.onSettled === undefined) return;
    try {
      o.onSettled(event);
    } catch (error) {
      logger.error('sqs worker: onSettled threw', { error: errorName(error) });
    }
  };

  async function begin(): Promise<void> {
    const info = await describeQueue(client, queueUrl, o.deadLetterQueueUrl, requestMs);
    const visibilityTimeoutSeconds = o.visibilityTimeoutSeconds ?? info.visibilityTimeoutSeconds;
    const intervalMs =
      o.heartbeatIntervalMs ?? Math.max(100, Math.floor((visibilityTimeoutSeconds * 1000) / 3));
    if (o.heartbeatEnabled && intervalMs >= visibilityTimeoutSeconds * 1000) {
      throw new ConfigurationError(
        'heartbeat.intervalMs must be below the visibility timeout, or messages expire between heartbeats',
        { intervalMs, visibilityTimeoutSeconds },
      );
    }
    const inbox = o.inbox ?? createOwnInbox(info);
    if (info.deadLetterQueueUrl === undefined) {
      logger.info('sqs worker: no dead-letter queue; dead letters are kept in the store only', {
        queueUrl,
      });
    }
    const heartbeat = o.heartbeatEnabled
      ? new Heartbeat(
          client,
          queueUrl,
          visibilityTimeoutSeconds,
          intervalMs,
          requestMs,
          logger,
          instruments,
          (h) => h.controller.abort(new Error('the delivery went stale: SQS delivers it again')),
        )
      : undefined;
    run = {
      info,
      inbox,
      visibilityTimeoutSeconds,
      heartbeat,
      deleter: new Deleter(client, queueUrl, logger, instruments, requestMs),
      lanes: new GroupLanes(),
      envelopeSettings: {
        queueUrl,
        messageId: o.messageId,
        scopeAttribute: o.scopeAttribute,
        onExtractError: (error, message) =>
          logger.warn('sqs worker: messageId.extract threw; the message has no id', {
            queueUrl,
            sqsMessageId: message.MessageId,
            error: errorName(error),
          }),
      },
    };
  }

  function createOwnInbox(info: SqsQueueInfo): Inbox {
    const settings = o.inboxSettings;
    if (settings === undefined) throw new Error('inbox settings missing');
    const horizonMs = info.retentionSeconds * 1000;
    let maxAttempts = settings.maxAttempts;
    if (info.maxReceiveCount !== undefined) {
      if (maxAttempts === undefined) {
        maxAttempts = Math.max(1, Math.min(5, info.maxReceiveCount - 1));
      } else if (maxAttempts >= info.maxReceiveCount) {
        logger.warn(
          'sqs worker: maxAttempts is not below the redrive maxReceiveCount; SQS may move a message to the dead-letter queue before the inbox records it',
          { queueUrl, maxAttempts, maxReceiveCount: info.maxReceiveCount },
        );
      }
    }
    return createInbox({
      ...settings,
      ...(maxAttempts !== undefined ? { maxAttempts } : {}),
      retentionMs: settings.retentionMs ?? Math.max(7 * DAY_MS, horizonMs),
      redeliveryHorizonMs: horizonMs,
      decode: o.decode,
      logger,
      meter: o.meter,
      backoff: o.retry,
    });
  }

  async function poll(): Promise<void> {
    let failures = 0;
    while (state === 'running') {
      const n = await permits.take(receiveBatch, prefetch);
      if (n === 0) break;
      if (state !== 'running' || run === undefined) {
        permits.give(n);
        break;
      }
      let messages: Message[];
      try {
        const visibility = run.visibilityTimeoutSeconds;
        const response = await timeLimited(
          'ReceiveMessage',
          receiveLimitMs,
          (signal) =>
            client.send(
              new ReceiveMessageCommand({
                QueueUrl: queueUrl,
                MaxNumberOfMessages: n,
                WaitTimeSeconds: o.waitTimeSeconds,
                VisibilityTimeout: visibility,
                MessageAttributeNames: ['All'],
                MessageSystemAttributeNames: ['ApproximateReceiveCount', 'MessageGroupId'],
              }),
              { abortSignal: signal },
            ),
          receiveAbort.signal,
        );
        messages = response.Messages ?? [];
        failures = 0;
        receiveOutage.recovered('sqs worker: ReceiveMessage answers again; receiving resumed');
      } catch (error) {
        permits.give(n);
        if (state !== 'running') break;
        failures += 1;
        instruments.receiveFailed();
        // Once per outage (a timeout, a lost connection, the queue gone), not once per poll.
        receiveOutage.failed(
          'sqs worker: ReceiveMessage failed; polling again with backoff until SQS answers',
          error,
        );
        await sleep(fullJitterBackoff(failures, RECEIVE_BACKOFF), receiveAbort.signal);
        continue;
      }
      permits.give(n - messages.length);
      instruments.received(messages.length);
      dispatch(run, messages);
    }
  }

  function hold(
    r: Running,
    message: Message,
    controller: AbortController,
  ): HeldMessage | undefined {
    if (!message.ReceiptHandle) {
      permits.give(1);
      return undefined;
    }
    const h: HeldMessage = {
      seq: ++seq,
      message,
      receiptHandle: message.ReceiptHandle,
      controller,
    };
    held.set(h.seq, h);
    r.heartbeat?.watch(h);
    return h;
  }

  function track(r: Running, batch: readonly HeldMessage[], task: Promise<unknown>): void {
    const tracked: Promise<void> = task
      .then(() => undefined)
      .catch((error: unknown) => {
        logger.error('sqs worker: settling messages failed', {
          queueUrl,
          sqsMessageIds: batch.map((h) => h.message.MessageId),
          error: errorName(error),
        });
      })
      .finally(() => {
        for (const h of batch) {
          r.heartbeat?.unwatch(h);
          held.delete(h.seq);
        }
        tasks.delete(tracked);
        permits.give(batch.length);
      });
    tasks.add(tracked);
  }

  function dispatch(r: Running, messages: readonly Message[]): void {
    if (o.mode === 'batch') {
      // One signal for the batch: its messages are handled together, so one going stale
      // aborts them all (and no listener per message is needed to pass that on).
      const controller = new AbortController();
      const batch = messages.map((m) => hold(r, m, controller)).filter((h) => h !== undefined);
      if (batch.length > 0) track(r, batch, settleBatch(r, batch, controller.signal));
      return;
    }
    const batch = messages
      .map((m) => hold(r, m, new AbortController()))
      .filter((h) => h !== undefined);
    for (const h of batch) {
      const group = h.message.Attributes?.MessageGroupId ?? '';
      const task = r.info.fifo
        ? r.lanes.enqueue(group, h.seq, (behind) => settle(r, h, behind))
        : settle(r, h, false);
      track(r, [h], task);
    }
  }

  /**
   * Makes `h` visible again after `seconds`; the error when SQS refused. The heartbeat stops
   * extending `h` first, and an extension already on its way is waited for: landing after
   * this change it would undo it and hide the message (on a FIFO queue, its whole group) for
   * a visibility timeout.
   */
  async function changeVisibility(
    r: Running,
    h: HeldMessage,
    seconds: number,
  ): Promise<Error | undefined> {
    r.heartbeat?.unwatch(h);
    await r.heartbeat?.settled(h);
    try {
      await timeLimited('ChangeMessageVisibility', requestMs, (signal) =>
        client.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: queueUrl,
            ReceiptHandle: h.receiptHandle,
            VisibilityTimeout: seconds,
          }),
          { abortSignal: signal },
        ),
      );
      return undefined;
    } catch (error) {
      logger.warn('sqs worker: ChangeMessageVisibility failed; the visibility timeout decides', {
        queueUrl,
        sqsMessageId: h.message.MessageId,
        error: errorName(error),
      });
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /** Makes `h` visible again at once, unhandled. Resolves `true` (held back). */
  async function release(r: Running, h: HeldMessage): Promise<boolean> {
    const error = await changeVisibility(r, h, 0);
    emit({
      message: h.message,
      outcome: undefined,
      action: 'released',
      ...(error ? { error } : {}),
    });
    return true;
  }

  /** The inbox itself failed (the store is unreachable): retry after a backoff. */
  async function retryAfterStoreFailure(
    r: Running,
    h: HeldMessage,
    error: unknown,
  ): Promise<boolean> {
    const { message } = h;
    const delay = toSeconds(fullJitterBackoff(receiveCountOf(message), o.retry));
    logger.error('sqs worker: the inbox failed (store unreachable?); retrying the message', {
      queueUrl,
      sqsMessageId: message.MessageId,
      error: errorName(error),
      message: error instanceof Error ? error.message : String(error),
      retryInSeconds: delay,
    });
    await changeVisibility(r, h, delay);
    emit({
      message,
      outcome: undefined,
      action: 'retry-scheduled',
      error: error instanceof Error ? error : new Error(String(error)),
    });
    return true;
  }

  /**
   * The store (or a dependency the inbox's `classify` calls infrastructure) is down while
   * `batch` is held: waits a backoff with the messages kept in flight by the heartbeat, so
   * SQS neither delivers them again nor raises their receive count (which the inbox counts
   * as attempts: a long outage would dead-letter good messages). Resolves whether to try
   * them again: not for other errors, not without a heartbeat (they would expire meanwhile),
   * not once the worker stops or a delivery went stale.
   */
  async function pauseForStore(
    r: Running,
    batch: readonly HeldMessage[],
    error: unknown,
    round: number,
  ): Promise<boolean> {
    const gone = () => state !== 'running' || batch.some((h) => h.controller.signal.aborted);
    if (!isStoreUnavailable(error) || r.heartbeat === undefined || gone()) return false;
    storeOutage.failed(
      'sqs worker: the store is unavailable; holding messages in flight and retrying them with backoff',
      error,
      { sqsMessageIds: batch.map((h) => h.message.MessageId) },
    );
    const stale = batch[0]?.controller.signal;
    const wake = stale ? AbortSignal.any([receiveAbort.signal, stale]) : receiveAbort.signal;
    await sleep(fullJitterBackoff(round, storeBackoff), wake);
    return !gone();
  }

  /**
   * Handles one held message (message mode) and acts on the outcome. Resolves whether the
   * message was held back (retry scheduled or released), which holds back its FIFO group's
   * later messages. Through a store outage the message stays in flight and is tried again
   * in-process; when the worker stops meanwhile it is released.
   */
  async function settle(r: Running, h: HeldMessage, behindHeldBack: boolean): Promise<boolean> {
    if (state !== 'running' || behindHeldBack) return release(r, h);
    for (let round = 1; ; round++) {
      if ((await handlerSlots.take(1)) === 0) return release(r, h);
      let result: { outcome: InboxOutcome<R> } | { error: unknown };
      try {
        const envelope = toEnvelope(h.message, r.envelopeSettings);
        result = {
          outcome: await r.inbox.process(envelope, o.handler, { signal: h.controller.signal }),
        };
      } catch (error) {
        result = { error };
      } finally {
        // Not held through a backoff: other messages may run meanwhile.
        handlerSlots.give(1);
      }
      if ('outcome' in result) {
        storeOutage.recovered('sqs worker: the store answers again; held messages go on');
        return actOn(r, h, result.outcome);
      }
      if (await pauseForStore(r, [h], result.error, round)) continue;
      if (state !== 'running') return release(r, h);
      return retryAfterStoreFailure(r, h, result.error);
    }
  }

  /**
   * Handles one receive batch (batch mode) with `processBatch`, one transaction per round,
   * every round with the batch's `signal`.
   * On a FIFO queue round k holds the k-th message of each group, so a group stays in order;
   * a group with a message held back has its later messages released.
   */
  async function settleBatch(
    r: Running,
    batch: readonly HeldMessage[],
    signal: AbortSignal,
  ): Promise<void> {
    const rounds: HeldMessage[][] = [];
    if (r.info.fifo) {
      const position = new Map<string, number>();
      for (const h of batch) {
        const group = h.message.Attributes?.MessageGroupId ?? '';
        const k = position.get(group) ?? 0;
        position.set(group, k + 1);
        (rounds[k] ??= []).push(h);
      }
    } else {
      rounds.push([...batch]);
    }
    const blocked = new Set<string>();
    const groupOf = (h: HeldMessage) => h.message.Attributes?.MessageGroupId ?? '';
    for (const round of rounds) {
      const live: HeldMessage[] = [];
      const released: Promise<boolean>[] = [];
      for (const h of round) {
        if (state !== 'running' || (r.info.fifo && blocked.has(groupOf(h)))) {
          released.push(release(r, h));
        } else {
          live.push(h);
        }
      }
      await Promise.all(released);
      if (live.length === 0) continue;
      const heldBack = await settleRound(r, live, signal);
      live.forEach((h, i) => {
        if (heldBack[i]) blocked.add(groupOf(h));
      });
    }
  }

  /**
   * Handles one round of a receive batch in one `processBatch` transaction and acts on each
   * outcome; resolves, per message, whether it was held back. Through a store outage the
   * round stays in flight and is tried again, as in {@link settle}.
   */
  async function settleRound(
    r: Running,
    live: readonly HeldMessage[],
    signal: AbortSignal,
  ): Promise<boolean[]> {
    const releaseAll = () => Promise.all(live.map((h) => release(r, h)));
    for (let round = 1; ; round++) {
      if ((await handlerSlots.take(live.length, live.length)) === 0) return releaseAll();
      let result: { outcomes: InboxOutcome<R>[] } | { error: unknown };
      try {
        const envelopes = live.map((h) => toEnvelope(h.message, r.envelopeSettings));
        result = { outcomes: await r.inbox.processBatch(envelopes, o.handler, { signal }) };
      } catch (error) {
        result = { error };
      } finally {
        handlerSlots.give(live.length);
      }
      if ('outcomes' in result) {
        storeOutage.recovered('sqs worker: the store answers again; held messages go on');
        const { outcomes } = result;
        return Promise.all(
          live.map((h, i) => {
            const outcome = outcomes[i];
            return outcome === undefined
              ? retryAfterStoreFailure(r, h, new Error('processBatch returned no outcome'))
              : actOn(r, h, outcome);
          }),
        );
      }
      if (await pauseForStore(r, live, result.error, round)) continue;
      if (state !== 'running') return releaseAll();
      const { error } = result;
      return Promise.all(live.map((h) => retryAfterStoreFailure(r, h, error)));
    }
  }

  /** Acts on the inbox's outcome for `h`. Resolves whether the message was held back. */
  async function actOn(r: Running, h: HeldMessage, outcome: InboxOutcome<R>): Promise<boolean> {
    const { message } = h;
    r.heartbeat?.unwatch(h);
    switch (outcome.status) {
      case 'processed':
      case 'duplicate':
        deleteAndReport(r, h, outcome);
        return false;
      case 'failed': {
        const error = await changeVisibility(r, h, toSeconds(outcome.retryDelayMs));
        emit({ message, outcome, action: 'retry-scheduled', error: error ?? outcome.error });
        return true;
      }
      case 'dead-lettered': {
        logger.warn('sqs worker: message dead-lettered', {
          queueUrl,
          sqsMessageId: message.MessageId,
          messageId: outcome.messageId,
          reason: outcome.reason,
          deadLetterId: outcome.deadLetterId,
          error: outcome.error.message,
        });
        const dlq = r.info.deadLetterQueueUrl;
        if (dlq !== undefined) {
          try {
            await forwardToDeadLetterQueue(
              client,
              dlq,
              r.info.fifo,
              message,
              {
                reason: outcome.reason,
                deadLetterId: outcome.deadLetterId,
                consumer: r.inbox.consumer,
                error: outcome.error.message,
                sourceQueue: queueUrl,
              },
              requestMs,
            );
            instruments.deadLetterForwarded();
          } catch (cause) {
            const error = new SqsDeadLetterError(
              { sqsMessageId: message.MessageId ?? '', deadLetterQueueUrl: dlq },
              cause,
            );
            logger.error(error.message, { ...error.details, error: errorName(cause) });
            emit({ message, outcome, action: 'left-in-flight', error });
            return false;
          }
        }
        deleteAndReport(r, h, outcome);
        return false;
      }
    }
  }

  function deleteAndReport(r: Running, h: HeldMessage, outcome: InboxOutcome<R>): void {
    const deleting = r.deleter.delete(h).then((deleted) => {
      const action: SqsWorkerAction = deleted ? 'deleted' : 'left-in-flight';
      emit({ message: h.message, outcome, action });
    });
    tasks.add(deleting);
    void deleting.finally(() => tasks.delete(deleting));
  }

  async function shutdown(timeoutMs: number): Promise<void> {
    if (state === 'new') {
      state = 'stopped';
      if (owned) client.destroy();
      return;
    }
    if (state === 'starting') await startPromise?.catch(() => undefined);
    if (state !== 'running' && state !== 'stopping') {
      state = 'stopped';
      if (owned) client.destroy();
      return;
    }
    state = 'stopping';
    receiveAbort.abort();
    permits.close();
    handlerSlots.close();
    await Promise.all(pollers);

    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      (async () => {
        while (tasks.size > 0) await Promise.all(tasks);
        return true;
      })(),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (!finished) {
      logger.warn('sqs worker: handlers still running at the shutdown timeout; aborting them', {
        queueUrl,
        running: held.size,
      });
      for (const h of held.values()) h.controller.abort(new Error('the worker is stopping'));
    }
    run?.heartbeat?.stop();
    await run?.deleter.close();
    state = 'stopped';
    if (owned) client.destroy();
  }

  return {
    start(): Promise<void> {
      if (state !== 'new') {
        return Promise.reject(
          new SqsStateError(`start was called on a ${state} worker`, { state }),
        );
      }
      state = 'starting';
      startPromise = begin().then(
        () => {
          if (state !== 'starting' || run === undefined) return;
          state = 'running';
          run.heartbeat?.start();
          const count = Math.max(1, Math.ceil(o.concurrency / RECEIVE_BATCH));
          pollers = Array.from({ length: count }, () => poll());
          logger.info('sqs worker started', {
            queueUrl,
            fifo: run.info.fifo,
            concurrency: o.concurrency,
            pollers: count,
            visibilityTimeoutSeconds: run.visibilityTimeoutSeconds,
            heartbeat: o.heartbeatEnabled,
            deadLetterQueueUrl: run.info.deadLetterQueueUrl,
          });
        },
        (error: unknown) => {
          if (state === 'starting') state = 'new';
          throw error;
        },
      );
      return startPromise;
    },
    stop(stopOptions?: SqsStopOptions): Promise<void> {
      if (stopPromise) return stopPromise;
      const timeoutMs = stopOptions?.timeoutMs ?? o.shutdownTimeoutMs;
      if (!Number.isInteger(timeoutMs) || timeoutMs < 0) {
        return Promise.reject(new ConfigurationError('timeoutMs must be a non-negative integer'));
      }
      // Stop receiving at once; the rest of the shutdown is asynchronous.
      if (state === 'running') {
        state = 'stopping';
        receiveAbort.abort();
        permits.close();
        handlerSlots.close();
      }
      stopPromise = shutdown(timeoutMs);
      return stopPromise;
    },
    get running() {
      return state === 'running';
    },
    get inFlight() {
      return held.size;
    },
    get queue() {
      return run?.info;
    },
  };
}
