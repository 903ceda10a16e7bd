import { ConfigurationError } from '@justonce/core';
import { driveIntake, finishesWithin, type ConsumerStopOptions } from '@justonce/core/transport';
import { sqsIntake } from './intake';
import { Deleter } from './visibility/deleter';
import { Heartbeat } from './visibility/heartbeat';
import { GroupLanes } from './fifo/lanes';
import { describeQueue } from './queue/queue-info';
import { checkRedrive } from './queue/redrive-check';
import { poll } from './visibility/receive';
import { RECEIVE_BATCH, report, type ConsumerRuntime, type QueueSetup } from './runtime';
import { releaseAtStop } from './settle';
import { errorName } from '../client/request-errors';

/** Describes the queue and builds what handling its messages needs. */
async function setUp<R>(rt: ConsumerRuntime<R>): Promise<QueueSetup> {
  const o = rt.options;
  const { requestMs } = o.timeouts;
  const info = await describeQueue(rt.client, o.queueUrl, o.deadLetterQueueUrl, requestMs);
  const visibilityTimeoutSeconds = o.visibilityTimeoutSeconds ?? info.visibilityTimeoutSeconds;
  const intervalMs =
    o.heartbeatIntervalMs ?? Math.max(100, Math.floor((visibilityTimeoutSeconds * 1000) / 3));
  if (o.heartbeatEnabled && intervalMs >= visibilityTimeoutSeconds * 1000) {
    throw new ConfigurationError(
      'heartbeat.intervalMs must be below the visibility timeout, or messages expire between heartbeats',
      { intervalMs, visibilityTimeoutSeconds },
    );
  }
  const heartbeat = o.heartbeatEnabled
    ? new Heartbeat(
        rt.client,
        o.queueUrl,
        visibilityTimeoutSeconds,
        intervalMs,
        requestMs,
        o.logger,
        rt.instruments,
        (h) => h.controller.abort(new Error('the delivery went stale: SQS delivers it again')),
      )
    : undefined;
  return {
    info,
    visibilityTimeoutSeconds,
    heartbeat,
    deleter: new Deleter(rt.client, o.queueUrl, o.logger, rt.instruments, requestMs),
    lanes: new GroupLanes(),
    envelopeSettings: {
      queueUrl: o.queueUrl,
      messageId: o.messageId,
      scopeHeader: o.scopeHeader,
      onExtractError: (error, message) =>
        o.logger.warn('sqs consumer: messageId.extract threw; the message has no id', {
          queueUrl: o.queueUrl,
          sqsMessageId: message.MessageId,
          error: errorName(error),
        }),
    },
  };
}

/**
 * The `start` hook of the consumer's lifecycle: describes the queue (a typed error when it
 * cannot, or when the configuration does not fit it), then starts the heartbeat and the
 * pollers. @internal
 */
export async function startConsumer<R>(rt: ConsumerRuntime<R>): Promise<void> {
  rt.started = true;
  const setup = await setUp(rt);
  const o = rt.options;
  if (setup.info.deadLetterQueueUrl === undefined) {
    o.logger.info('sqs consumer: no dead-letter queue; dead letters are kept in the store only', {
      queueUrl: o.queueUrl,
    });
  }
  checkRedrive(o.inbox, setup.info, o.logger);
  rt.setup = setup;
  rt.live = true;
  rt.undrive = driveIntake(o.inbox, { logger: o.logger, intake: sqsIntake(rt) });
  setup.heartbeat?.start();
  const count = Math.max(1, Math.ceil(o.concurrency / RECEIVE_BATCH));
  rt.pollers = Array.from({ length: count }, () => poll(rt, setup));
  o.logger.info('sqs consumer started', {
    queueUrl: o.queueUrl,
    fifo: setup.info.fifo,
    concurrency: o.concurrency,
    pollers: count,
    visibilityTimeoutSeconds: setup.visibilityTimeoutSeconds,
    heartbeat: o.heartbeatEnabled,
    deadLetterQueueUrl: setup.info.deadLetterQueueUrl,
  });
}

/** Resolves `true` once every settling task ended, `false` at `timeoutMs` if some have not. */
function settledWithin<R>(rt: ConsumerRuntime<R>, timeoutMs: number): Promise<boolean> {
  return finishesWithin(
    (async () => {
      while (rt.tasks.size > 0) await Promise.all(rt.tasks);
    })(),
    timeoutMs,
  );
}

/**
 * Ends the work in flight: with `drain`, waits for it up to `timeoutMs`, then aborts the
 * handlers still running and reports their messages `abandoned` (they come back after the
 * visibility timeout); without, aborts them at once and makes every message in hand visible
 * again. Either way the consumer takes the messages it ends over: a handler that answers
 * later neither deletes, moves nor reports its message.
 */
async function endInFlight<R>(
  rt: ConsumerRuntime<R>,
  setup: QueueSetup,
  { drain, timeoutMs }: Required<ConsumerStopOptions>,
): Promise<void> {
  if (drain && (await settledWithin(rt, timeoutMs))) return;
  if (drain) {
    rt.options.logger.warn(
      'sqs consumer: handlers still running at the shutdown timeout; aborting them',
      { queueUrl: rt.options.queueUrl, running: rt.held.size },
    );
  }
  const reason = new Error(
    drain ? 'the consumer is stopping' : 'the consumer stops without draining',
  );
  const inHand = [...rt.held.values()];
  // Marked before the abort: a handler that ends on it must not move its message after this.
  const takenOver = inHand.filter((h) => !rt.reported.has(h));
  for (const h of takenOver) rt.givenBack.add(h);
  for (const h of inHand) h.controller.abort(reason);
  if (!drain) {
    await Promise.all(takenOver.map((h) => releaseAtStop(rt, setup, h)));
    return;
  }
  // Left in flight: a late commit is answered as a duplicate on the redelivery.
  const error = new Error(
    'the consumer stopped before the handler ended; SQS delivers the message again after its visibility timeout',
  );
  for (const h of takenOver) report(rt, h, { action: 'abandoned', error });
}

/**
 * The `stop` hook of the consumer's lifecycle: stops receiving at once, ends the work in
 * flight as `options` say, stops the heartbeat, flushes pending deletes and destroys a
 * client the consumer created. @internal
 */
export async function stopConsumer<R>(
  rt: ConsumerRuntime<R>,
  options: Required<ConsumerStopOptions>,
): Promise<void> {
  rt.live = false;
  rt.undrive();
  rt.receiveAbort.abort();
  rt.permits.close();
  rt.handlerSlots.close();
  try {
    await Promise.all(rt.pollers);
    const { setup } = rt;
    if (setup === undefined) return;
    await endInFlight(rt, setup, options);
    setup.heartbeat?.stop();
    await setup.deleter.close();
  } finally {
    if (rt.ownsClient) rt.client.destroy();
  }
}

/** Refuses a stop `timeoutMs` that is not a non-negative integer. @internal */
export function checkStopOptions(options: ConsumerStopOptions | undefined): void {
  const timeoutMs = options?.timeoutMs;
  if (timeoutMs !== undefined && (!Number.isInteger(timeoutMs) || timeoutMs < 0)) {
    throw new ConfigurationError('timeoutMs must be a non-negative integer', { timeoutMs });
  }
  const drain = options?.drain;
  if (drain !== undefined && typeof drain !== 'boolean') {
    throw new ConfigurationError('drain must be a boolean', { drain });
  }
}
