import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { MessagingSystem, SettledEvent } from '@justonce/core/transport';
import { resolveClient } from '../client/client';
import { queueNameOfUrl } from '../client/queue-names';
import type { EnvelopeSettings } from './envelope';
import { Permits } from '../client/limiter';
import { OutageNotice } from '../client/outage-notice';
import { errorName } from '../client/request-errors';
import type { Deleter } from './visibility/deleter';
import type { Heartbeat } from './visibility/heartbeat';
import type { HeldMessage } from './visibility/held-message';
import { createConsumerInstruments, type ConsumerInstruments } from './meter/instruments';
import type { GroupLanes } from './fifo/lanes';
import {
  MAX_VISIBILITY_SECONDS,
  STORE_OUTAGE_BACKOFF_CAP_MS,
  type ResolvedConsumerOptions,
} from './options';
import type { SqsConsumerOptions, SqsQueueInfo } from './types';

/** Added to the wait of a long poll aborted by `stop`, for the request's way to SQS. */
const POLL_MARGIN_MS = 500;

/** Messages one `ReceiveMessage` call returns at most. */
export const RECEIVE_BATCH = 10;

/** Everything `start` sets up once the queue is described. @internal */
export interface QueueSetup {
  readonly info: SqsQueueInfo;
  readonly visibilityTimeoutSeconds: number;
  readonly heartbeat: Heartbeat | undefined;
  readonly deleter: Deleter;
  readonly lanes: GroupLanes;
  readonly envelopeSettings: EnvelopeSettings;
}

/**
 * What the functions of one consumer share: its resolved options, its client, and the state
 * of the deliveries it holds. @internal
 */
export interface ConsumerRuntime<R> {
  readonly options: ResolvedConsumerOptions<R>;
  readonly client: SQSClient;
  /** Whether the client was created here (and is destroyed at stop). */
  readonly ownsClient: boolean;
  readonly instruments: ConsumerInstruments;
  /** Limit of one `ReceiveMessage`: the long poll waits up to `waitTimeSeconds` by design. */
  readonly receiveLimitMs: number;
  readonly receiveOutage: OutageNotice;
  readonly storeOutage: OutageNotice;
  /** Backoff of deliveries held through a store outage. */
  readonly holdBackoff: { readonly baseMs: number; readonly capMs: number };
  /** Received and not settled, by `seq`. */
  readonly held: Map<number, HeldMessage>;
  /** Settling work in flight (handlers, deletes), awaited by a draining stop. */
  readonly tasks: Set<Promise<void>>;
  /** Aborted at stop: ends long polls and hold backoffs at once. */
  readonly receiveAbort: AbortController;
  /** Messages received ahead of the handler slots. */
  readonly prefetch: number;
  /** Messages held at once: `concurrency` running plus `prefetch` waiting. */
  readonly permits: Permits;
  /** Handlers running at once. */
  readonly handlerSlots: Permits;
  /** Messages asked for per receive. */
  readonly receiveBatch: number;
  /** Messages whose final action was reported, so a stop's release is not reported twice. */
  readonly reported: WeakSet<HeldMessage>;
  /**
   * Messages a stop took over (released without drain, abandoned at a drain's timeout): their
   * handler's outcome no longer deletes, moves or reports them.
   */
  readonly givenBack: WeakSet<HeldMessage>;
  /**
   * Long polls sent and not answered, by when SQS ends them. One aborted by `stop` stays:
   * SQS still holds it and would hand it a message released before it ends.
   */
  readonly openPolls: Set<{ readonly until: number }>;
  /**
   * While the consumer's circuit breaker is open: when its probe may go through
   * (`Date.now()` time). The pollers send no `ReceiveMessage` meanwhile, and messages the
   * breaker refuses are given back visible from then on instead of kept by the heartbeat.
   */
  intakePausedUntil: number | undefined;
  /** Aborted (and replaced) when the intake resumes: wakes the pollers waiting for it. */
  intakeResumed: AbortController;
  /** Ends the resilience layer's driving of the intake (at stop). */
  undrive: () => void;
  /** What `start` learned and built; `undefined` before. */
  setup: QueueSetup | undefined;
  /** Whether `start` was called (a stop before it still destroys an owned client). */
  started: boolean;
  /** From the end of `start` until `stop` begins: messages are received and handled. */
  live: boolean;
  pollers: Promise<void>[];
  /** The last `seq` given out. */
  seq: number;
  /** The broker and the queue's name, for the inbox's `process` spans. */
  readonly messaging: MessagingSystem;
}

/** Builds the runtime of a consumer; no call to SQS yet. @internal */
export function createRuntime<R>(
  options: ResolvedConsumerOptions<R>,
  source: SqsConsumerOptions<R>,
): ConsumerRuntime<R> {
  const { client, owned } = resolveClient(source, 'createSqsConsumer', options.timeouts);
  const { logger, queueUrl, concurrency, retry } = options;
  const { requestMs } = options.timeouts;
  const receiveLimitMs = requestMs > 0 ? options.waitTimeSeconds * 1000 + requestMs : 0;
  // Up to `prefetch` messages beyond `concurrency` are received ahead, so handlers do not
  // wait for a long poll; a poller receives only when a whole batch of that many fits.
  const prefetch = Math.min(RECEIVE_BATCH, concurrency);
  return {
    options,
    client,
    ownsClient: owned,
    instruments: createConsumerInstruments(options.meter, queueUrl),
    receiveLimitMs,
    receiveOutage: new OutageNotice(logger, { queueUrl, limitMs: receiveLimitMs }),
    storeOutage: new OutageNotice(logger, { queueUrl }),
    holdBackoff: {
      baseMs: Math.max(100, retry.baseMs),
      capMs: Math.max(100, Math.min(retry.capMs, STORE_OUTAGE_BACKOFF_CAP_MS)),
    },
    held: new Map(),
    tasks: new Set(),
    receiveAbort: new AbortController(),
    prefetch,
    permits: new Permits(concurrency + prefetch),
    handlerSlots: new Permits(concurrency),
    // In batch mode a receive batch is handled as one unit, so it must fit the handler slots.
    receiveBatch: options.mode === 'batch' ? prefetch : RECEIVE_BATCH,
    reported: new WeakSet(),
    givenBack: new WeakSet(),
    openPolls: new Set(),
    intakePausedUntil: undefined,
    intakeResumed: new AbortController(),
    undrive: () => undefined,
    setup: undefined,
    started: false,
    live: false,
    pollers: [],
    seq: 0,
    messaging: { system: 'aws_sqs', destination: queueNameOfUrl(queueUrl) ?? queueUrl },
  };
}

/** Whole seconds of visibility for a wait in milliseconds, within what SQS allows. @internal */
export function toSeconds(ms: number): number {
  return Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(ms / 1000)));
}

/**
 * How long a message given back now must stay hidden: 0 while the consumer runs; once it
 * stops, until the long polls it aborted have ended on SQS's side. SQS would hand a message
 * visible earlier to such a poll, whose answer nobody reads any more, and the message would
 * stay hidden for a whole visibility timeout. @internal
 */
export function releaseDelayMs<R>(rt: ConsumerRuntime<R>): number {
  if (rt.live) return 0;
  let until = 0;
  for (const poll of rt.openPolls) until = Math.max(until, poll.until);
  const left = until - Date.now();
  // The margin covers the request's way to SQS: its wait began a little after `until` was set.
  return left > 0 ? left + POLL_MARGIN_MS : 0;
}

/** The event without the parts {@link report} fills in. */
type Report<R> = Omit<SettledEvent<R, Message>, 'message' | 'messageId'>;

/**
 * Reports what the consumer did with `h` to `onSettled`. A final action is reported once:
 * a message a `stop({ drain: false })` released is not reported again when its handler
 * ends. A throwing hook is logged, never passed on: it must not unsettle the message.
 * @internal
 */
export function report<R>(rt: ConsumerRuntime<R>, h: HeldMessage, event: Report<R>): void {
  if (rt.reported.has(h)) return;
  if (event.action !== 'held') rt.reported.add(h);
  const { onSettled } = rt.options;
  if (onSettled === undefined) return;
  const messageId = event.outcome?.messageId ?? h.messageId;
  try {
    onSettled({ ...event, message: h.message, messageId });
  } catch (error) {
    rt.options.logger.error('sqs consumer: onSettled threw', { error: errorName(error) });
  }
}
