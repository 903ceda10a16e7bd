import { EventEmitter } from 'node:events';
import type { Consumer, MessagesStream } from '@platformatic/kafka';
import { errorMessage } from '@justonce/core/transport';
import type {
  KafkaBatchContext,
  KafkaConsumerClient,
  KafkaConsumerConfig,
  KafkaInstrumentationEvent,
  KafkaOffsetsByTopicPartition,
  KafkaRecord,
  KafkaRunConfig,
} from '../types';
import { KafkaStateError } from '../../errors';
import type { PlatformaticBase } from './client';
import { loadPlatformaticKafka } from './load';
import {
  createPartitionFeed,
  type PartitionFeed,
  type PartitionState,
  type StreamMessage,
} from './partition-feed';
import { isUnreachable } from './errors';

/** The kafkajs event names the consumer reports under (what `outage.ts` listens for). */
const EVENTS = Object.freeze({
  GROUP_JOIN: 'consumer.group_join',
  HEARTBEAT: 'consumer.heartbeat',
  COMMIT_OFFSETS: 'consumer.commit_offsets',
  FETCH: 'consumer.fetch',
  CRASH: 'consumer.crash',
  REQUEST_TIMEOUT: 'consumer.network.request_timeout',
});

/** Delay before the message stream is opened again after it failed. */
const RESTART_DELAY_MS = { first: 250, max: 2_000 };

/** A commit sent and not answered: a rejoin meanwhile withdraws its offsets. */
interface PendingCommit {
  readonly offsets: Array<{
    topic: string;
    partition: number;
    offset: bigint;
    leaderEpoch: number;
  }>;
  withdrawn: boolean;
}

/** The state of one adapted consumer. */
interface ConsumerState {
  readonly base: PlatformaticBase;
  readonly config: KafkaConsumerConfig;
  readonly events: EventEmitter;
  consumer: Consumer | undefined;
  stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  topics: string[];
  fromBeginning: boolean;
  run: KafkaRunConfig | undefined;
  running: boolean;
  /** Group joins seen; a batch begun under an older one may be revoked. */
  generation: number;
  readonly pendingCommits: Set<PendingCommit>;
  readonly batches: Set<Promise<void>>;
  feed: PartitionFeed | undefined;
  restartTimer: ReturnType<typeof setTimeout> | undefined;
  restarts: number;
  /** Armed while a heartbeat is unanswered. */
  heartbeatWatch: ReturnType<typeof setTimeout> | undefined;
}

/**
 * A {@link KafkaConsumerClient} on @platformatic/kafka's `Consumer`. The library hands out
 * one stream of messages for every assigned partition; this adapter sorts them into
 * per-partition batches for `eachBatch`, one batch per partition at a time and at most
 * `partitionsConsumedConcurrently` at once, and gives each batch kafkajs's capabilities:
 *
 * - `seek` moves the stream's fetch position of the partition; records fetched from before
 *   the seek are dropped until the sought record arrives (the library may have a fetch in
 *   flight that moves the position past it again, which is then undone);
 * - `pause` holds a partition: its records are dropped and its position kept, and the stream
 *   itself is paused while every assigned partition is;
 * - records of a batch not resolved when `eachBatch` ends are fetched again (a seek back to
 *   the first of them), as kafkajs fetches from the resolved offset;
 * - `commitOffsetsIfNecessary` commits the given offsets with the library's `commit`, refused
 *   for a partition not assigned any more; a commit still unanswered at a group join is
 *   withdrawn (the library would otherwise send it again under the new generation) and
 *   rejects, so nothing is committed for a partition that may have moved;
 * - `heartbeat` rejects once the group was joined again since the batch began (the library
 *   sends heartbeats on its own timer and rejoins by itself);
 * - a failed stream is reported as a crash (`restart: true`) and opened again after a delay.
 *
 * Topic patterns (RegExp) are not supported. @internal
 */
export function createPlatformaticConsumer(
  base: PlatformaticBase,
  config: KafkaConsumerConfig,
): KafkaConsumerClient {
  const state: ConsumerState = {
    base,
    config,
    events: new EventEmitter(),
    consumer: undefined,
    stream: undefined,
    topics: [],
    fromBeginning: false,
    run: undefined,
    running: false,
    generation: 0,
    pendingCommits: new Set(),
    batches: new Set(),
    feed: undefined,
    restartTimer: undefined,
    restarts: 0,
    heartbeatWatch: undefined,
  };
  return {
    events: EVENTS,
    connect: () => connect(state),
    subscribe: async ({ topics, fromBeginning }) => {
      const names = topics.map((t) => {
        if (typeof t !== 'string') {
          throw new KafkaStateError('@platformatic/kafka does not subscribe to topic patterns');
        }
        return t;
      });
      state.topics = [...state.topics, ...names];
      state.fromBeginning = fromBeginning ?? false;
    },
    run: async (run) => {
      state.run = run;
      state.running = true;
      state.feed = createPartitionFeed({
        concurrency: Math.max(1, run.partitionsConsumedConcurrently ?? 1),
        stream: () => state.stream,
        startBatch: (partition, records) => startBatch(state, partition, records),
      });
      await openStream(state);
    },
    stop: () => stop(state),
    disconnect: async () => {
      await stop(state);
      const consumer = state.consumer;
      state.consumer = undefined;
      await consumer?.close(true);
    },
    seek: ({ topic, partition, offset }) => state.feed?.seek(topic, partition, BigInt(offset)),
    pause: (selections) => {
      for (const { topic, partitions } of selections) {
        for (const p of partitions ?? []) state.feed?.partition(topic, p).pause();
      }
    },
    resume: (selections) => {
      for (const { topic, partitions } of selections) {
        for (const p of partitions ?? []) state.feed?.partition(topic, p).resume();
      }
    },
    on: (eventName, listener) => {
      state.events.on(eventName, listener);
      return () => state.events.off(eventName, listener);
    },
  };
}

function emit(state: ConsumerState, type: string, payload: unknown): void {
  const event: KafkaInstrumentationEvent = { type, payload };
  state.events.emit(type, event);
}

/** Builds the library's consumer and wires its events to the kafkajs names. */
async function connect(state: ConsumerState): Promise<void> {
  if (state.consumer !== undefined) return;
  const lib = await loadPlatformaticKafka();
  const { base, config } = state;
  const consumer = new lib.Consumer({
    clientId: base.clientId,
    bootstrapBrokers: base.bootstrapBrokers,
    connectTimeout: base.connectTimeout,
    timeout: base.timeout,
    requestTimeout: base.timeout,
    retries: config.retry?.retries ?? 5,
    retryDelay: config.retry?.initialRetryTime ?? 300,
    groupId: config.groupId,
    autocommit: false,
    autocreateTopics: config.allowAutoTopicCreation ?? true,
    ...groupTimings(config),
    ...(config.maxBytes === undefined ? {} : { maxBytes: config.maxBytes }),
    ...(config.maxBytesPerPartition === undefined
      ? {}
      : { maxBytesPerPartition: config.maxBytesPerPartition }),
  });
  consumer.on('consumer:group:join', (payload) => onGroupJoin(state, payload.assignments ?? []));
  watchHeartbeats(state, consumer);
  // A rejoin that failed for good: the member is out of the group until the stream reopens.
  consumer.on('error', (error: unknown) => crash(state, error));
  state.consumer = consumer;
  // As kafkajs's connect: fails when no broker answers.
  await consumer.metadata({ topics: [] });
}

/**
 * Heartbeats as kafkajs reports them: each answered one as `HEARTBEAT`, and one unanswered
 * after the request time limit as `REQUEST_TIMEOUT` at once (the library itself reports a
 * failed heartbeat only after its retries, many seconds later).
 */
function watchHeartbeats(state: ConsumerState, consumer: Consumer): void {
  const settle = (): void => {
    clearTimeout(state.heartbeatWatch);
    state.heartbeatWatch = undefined;
  };
  consumer.on('consumer:heartbeat:start', () => {
    settle();
    state.heartbeatWatch = setTimeout(() => {
      state.heartbeatWatch = undefined;
      if (state.running) emit(state, EVENTS.REQUEST_TIMEOUT, { apiName: 'Heartbeat' });
    }, state.base.timeout);
  });
  consumer.on('consumer:heartbeat:end', () => {
    settle();
    emit(state, EVENTS.HEARTBEAT, {});
  });
  consumer.on('consumer:heartbeat:cancel', settle);
  consumer.on('consumer:heartbeat:error', ({ error }) => {
    settle();
    if (isUnreachable(error) && state.running) {
      emit(state, EVENTS.REQUEST_TIMEOUT, { apiName: 'Heartbeat', error });
    }
  });
}

/** A join: the stream reads again from the committed offsets of the new assignment. */
function onGroupJoin(
  state: ConsumerState,
  assignments: ReadonlyArray<{ topic: string; partitions: number[] }>,
): void {
  state.generation += 1;
  for (const pending of state.pendingCommits) {
    pending.withdrawn = true;
    pending.offsets.length = 0;
  }
  state.feed?.assign(assignments);
  const memberAssignment: Record<string, number[]> = {};
  for (const { topic, partitions } of assignments) memberAssignment[topic] = [...partitions];
  emit(state, EVENTS.GROUP_JOIN, { memberAssignment, generation: state.generation });
}

/** Joins the group (the library does it in `consume`) and starts reading. */
async function openStream(state: ConsumerState): Promise<void> {
  const consumer = state.consumer;
  if (consumer === undefined) throw new KafkaStateError('the consumer is not connected');
  const { config } = state;
  const stream = await consumer.consume({
    topics: state.topics,
    autocommit: false,
    mode: 'committed',
    fallbackMode: state.fromBeginning ? 'earliest' : 'latest',
    ...groupTimings(config),
  });
  if (!state.running) {
    await stream.close().catch(() => undefined);
    return;
  }
  state.stream = stream;
  state.feed?.assign(consumer.assignments ?? []);
  stream.on('data', (message: StreamMessage) => {
    state.restarts = 0;
    state.feed?.accept(message);
  });
  stream.on('offsets', () => state.feed?.offsetsRefreshed());
  stream.on('error', (error: unknown) => crash(state, error));
}

/** The stream or the membership failed: report a crash and open the stream again. */
function crash(state: ConsumerState, error: unknown): void {
  if (!state.running) return;
  emit(state, EVENTS.CRASH, { error, restart: true });
  state.base.logger.debug('@platformatic/kafka consumer failed; opening its stream again', {
    groupId: state.config.groupId,
    error: errorMessage(error),
  });
  const stream = state.stream;
  state.stream = undefined;
  stream?.removeAllListeners('data');
  stream?.destroy();
  state.feed?.assign([]);
  if (state.restartTimer !== undefined) return;
  const delay = Math.min(RESTART_DELAY_MS.max, RESTART_DELAY_MS.first * 2 ** state.restarts);
  state.restarts += 1;
  state.restartTimer = setTimeout(() => {
    state.restartTimer = undefined;
    if (!state.running) return;
    openStream(state).catch((reopenError: unknown) => crash(state, reopenError));
  }, delay);
}

/** Stops reading and waits for the batches in flight. */
async function stop(state: ConsumerState): Promise<void> {
  state.running = false;
  clearTimeout(state.restartTimer);
  state.restartTimer = undefined;
  clearTimeout(state.heartbeatWatch);
  state.heartbeatWatch = undefined;
  const stream = state.stream;
  state.stream = undefined;
  if (stream !== undefined) {
    stream.removeAllListeners('data');
    await stream.close().catch(() => undefined);
  }
  await Promise.all([...state.batches]);
  state.feed?.assign([]);
}

/** Hands one partition's records to `eachBatch`; settles the partition when it returns. */
function startBatch(
  state: ConsumerState,
  partition: PartitionState,
  records: ReadonlyArray<StreamMessage>,
): void {
  const run = state.run;
  if (run === undefined) return;
  const generation = state.generation;
  const seeks = partition.seeks;
  const last = records[records.length - 1]!;
  let resolved: bigint | undefined;
  const stale = (): boolean =>
    partition.seeks !== seeks || state.generation !== generation || !partition.assigned;
  const ctx: KafkaBatchContext = {
    batch: {
      topic: partition.topic,
      partition: partition.partition,
      // The stream does not say; the offset after the batch is the least it can be.
      highWatermark: (last.offset + 1n).toString(),
      messages: records.map(toKafkaRecord),
    },
    resolveOffset: (offset) => {
      resolved = BigInt(offset);
    },
    heartbeat: async () => {
      if (state.running && state.generation !== generation) {
        throw new KafkaStateError('the group was joined again; the batch may be revoked');
      }
    },
    pause: () => {
      partition.pause();
      return () => partition.resume();
    },
    commitOffsetsIfNecessary: (offsets) => commit(state, offsets, last.leaderEpoch),
    isRunning: () => state.running,
    isStale: stale,
  };
  const work = run
    .eachBatch(ctx)
    .catch((error: unknown) => {
      state.base.logger.debug('eachBatch failed; its unresolved records are fetched again', {
        topic: partition.topic,
        partition: partition.partition,
        error: errorMessage(error),
      });
    })
    .finally(() => {
      state.batches.delete(work);
      // Records not resolved are delivered again, unless the partition moved meanwhile.
      if (state.running && !stale()) {
        const next = resolved === undefined ? records[0]!.offset : resolved + 1n;
        if (next <= last.offset) state.feed?.seek(partition.topic, partition.partition, next);
      }
      state.feed?.done(partition);
    });
  state.batches.add(work);
}

/** Commits offsets of assigned partitions; a rejoin while it is sent withdraws it. */
async function commit(
  state: ConsumerState,
  offsets: KafkaOffsetsByTopicPartition | undefined,
  leaderEpoch: number,
): Promise<void> {
  const consumer = state.consumer;
  if (consumer === undefined || offsets === undefined) return;
  const pending: PendingCommit = { offsets: [], withdrawn: false };
  for (const { topic, partitions } of offsets.topics) {
    for (const { partition, offset } of partitions) {
      if (state.feed?.partition(topic, partition).assigned !== true) {
        throw new KafkaStateError('the partition is not assigned to this member any more', {
          topic,
          partition,
        });
      }
      pending.offsets.push({ topic, partition, offset: BigInt(offset), leaderEpoch });
    }
  }
  state.pendingCommits.add(pending);
  try {
    await consumer.commit({ offsets: pending.offsets });
  } finally {
    state.pendingCommits.delete(pending);
  }
  if (pending.withdrawn) {
    throw new KafkaStateError('the group was joined again during the commit; it was withdrawn');
  }
  emit(state, EVENTS.COMMIT_OFFSETS, { groupId: state.config.groupId });
}

/** A stream message as kafkajs delivers a record: decimal strings, raw header bytes. */
function toKafkaRecord(message: StreamMessage): KafkaRecord {
  const byName = new Map<string, Buffer[]>();
  for (const [name, value] of message.headerEntries) {
    const key = name.toString('utf8');
    const values = byName.get(key) ?? [];
    values.push(value);
    byName.set(key, values);
  }
  const headers: Record<string, Buffer | Buffer[]> = {};
  for (const [name, values] of byName) {
    // Own properties for every name, `__proto__` included, as kafkajs delivers them.
    Object.defineProperty(headers, name, {
      value: values.length === 1 ? values[0] : values,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return {
    key: message.key ?? null,
    value: message.value ?? null,
    offset: message.offset.toString(),
    timestamp: message.timestamp.toString(),
    headers,
  };
}

/** The group's timings in @platformatic/kafka's names, only those the config sets. */
function groupTimings(config: KafkaConsumerConfig) {
  return {
    ...(config.sessionTimeout === undefined ? {} : { sessionTimeout: config.sessionTimeout }),
    ...(config.rebalanceTimeout === undefined ? {} : { rebalanceTimeout: config.rebalanceTimeout }),
    ...(config.heartbeatInterval === undefined
      ? {}
      : { heartbeatInterval: config.heartbeatInterval }),
    ...(config.maxWaitTimeInMs === undefined ? {} : { maxWaitTime: config.maxWaitTimeInMs }),
  };
}
