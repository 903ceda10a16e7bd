import type { ClaimedRow } from '../sql/claimed-row';
import type { RelayRuntime } from '../runtime';
import type { ResolvedLogOptions } from './options';
import { publishLeftovers, readBoundary, waitForRunningTransactions } from './cut-over';
import { SessionHandBack } from './hand-back';
import { publishEvents, type Abandon } from './publish';
import { openReplicationStream, type ReplicationStream } from './stream';
import { TransactionAssembler, type LogTransaction } from './transactions';
import type { ServerFrame } from './wal-frames';
import { DEFAULT_TIMEOUTS } from '../../store/limits';
import { randomUUID } from 'node:crypto';

/** What the relay and its gauges see of the session that reads the slot. @internal */
export interface SessionView {
  /** Transactions read and not yet confirmed, oldest first. */
  readonly queue: readonly LogTransaction[];
  /** Events of `queue[0]` already published (a transaction larger than a batch goes in parts). */
  readonly headDone: number;
}

/** How a session ends: when told to stop, or (for `runOnce` and a drain) once caught up. @internal */
export interface SessionControl extends Abandon {
  /** True once the session should stop taking new batches. */
  readonly stopping: () => boolean;
  /**
   * True when the session should end once it has published and confirmed everything that
   * committed before this was asked (see {@link writeMarker}).
   */
  readonly untilCaughtUp: () => boolean;
  /** Set while the session runs, for the gauges and `stats()`. */
  readonly onView: (view: SessionView | null) => void;
  /** Aborted when the relay is told to stop or drain: an idle session looks again at once. */
  readonly poke: AbortSignal;
  /** True once the relay was told to hand the outbox back to polling relays. */
  readonly handBack: () => boolean;
}

/** How a session ended: `'handed back'` once the outbox is the polling relays' (hand-back.ts). */
export type SessionEnd = 'stopped' | 'handed back';

/** Events above which the session stops reading the socket until the broker catches up. */
const BUFFER_BATCHES = 8;

/** The prefix of the logical messages that mark how far a session must read. */
export const MARKER_PREFIX = 'justonce.relay';

/**
 * Writes a marker into the WAL, in a transaction of its own: a logical message with a token
 * of this session. Decoding is in commit order, so once the marker's transaction comes out of
 * the slot, everything that committed before it has come out too. Resolves to the token.
 */
async function writeMarker(rt: RelayRuntime): Promise<string> {
  const token = randomUUID();
  await rt.options.store.knex.raw(`select pg_logical_emit_message(true, ?, ?)`, [
    MARKER_PREFIX,
    token,
  ]);
  return token;
}

/** Events read and not yet published: past BUFFER_BATCHES batches, the socket is not read. */
class Backlog {
  private buffered = 0;
  private paused = false;

  constructor(
    private readonly batchSize: number,
    private readonly stream: () => ReplicationStream | null,
  ) {}

  add(events: number): void {
    this.buffered += events;
    if (!this.paused && this.buffered > this.batchSize * BUFFER_BATCHES) {
      this.paused = true;
      this.stream()?.pause();
    }
  }

  /** Once the broker caught up by half, the socket is read again. */
  remove(events: number): void {
    this.buffered -= events;
    if (this.paused && this.buffered <= this.batchSize * (BUFFER_BATCHES / 2)) {
      this.paused = false;
      this.stream()?.resume();
    }
  }
}

/** This session's marker: written once, then whether its transaction is confirmed. */
class MarkerWait {
  private written = false;
  private token: string | null = null;
  /** Marker tokens of confirmed transactions (this session's and other relays' alike). */
  private readonly seen = new Set<string>();

  constructor(
    private readonly rt: RelayRuntime,
    private readonly onWritten: () => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Writes the marker, unless written already. */
  write(): void {
    if (this.written) return;
    this.written = true;
    writeMarker(this.rt).then((token) => {
      this.token = token;
      this.onWritten();
    }, this.onError);
  }

  /** Notes the markers of a confirmed transaction. */
  confirmed(t: LogTransaction): void {
    for (const token of t.markers) this.seen.add(token);
  }

  /** True once the marker's transaction is confirmed: everything before it is too. */
  get reached(): boolean {
    return this.token !== null && this.seen.has(this.token);
  }
}

/**
 * One connection's worth of the log relay: opens the slot's stream, gathers committed
 * transactions, publishes them in commit order (a batch takes whole transactions while they
 * fit, a larger one in parts) and confirms each batch's last whole transaction once the
 * broker acknowledged it. While nothing is unconfirmed, a keepalive's WAL position is
 * confirmed too, so the slot does not hold WAL for other tables' traffic. Resolves when told
 * to stop, or, when asked to end once caught up, after the transaction of its marker is
 * confirmed; rejects with the stream's error after the batch in flight has finished. @internal
 */
export async function runSession(
  rt: RelayRuntime,
  log: ResolvedLogOptions,
  control: SessionControl,
): Promise<SessionEnd> {
  const { store, batchSize } = rt.options;
  const queue: LogTransaction[] = [];
  let headDone = 0;
  let confirmed = 0n;
  let wake: () => void = () => undefined;
  const backlog = new Backlog(batchSize, () => stream);
  const view = (): SessionView => ({ queue, headDone });
  const cutOver = log.takeOverFromPolling ? await readBoundary(store, log) : null;
  const handBack = new SessionHandBack(control.handBack);
  const assembler = new TransactionAssembler(
    MARKER_PREFIX,
    store.schema,
    store.names.raw('outbox'),
    (committed) => {
      const t = within(committed, cutOver?.boundary ?? null, handBack.boundary);
      queue.push(t);
      backlog.add(t.events.length);
      wake();
    },
  );
  let stream: ReplicationStream | null = null;
  const confirm = (lsn: bigint): void => {
    if (lsn > confirmed) confirmed = lsn;
    if (confirmed > 0n) stream?.confirm(confirmed);
  };
  const onFrame = (frame: ServerFrame): void => {
    if (frame.kind === 'data') {
      assembler.push(frame.body);
      return;
    }
    if (queue.length === 0 && !assembler.inTransaction) {
      // Everything sent so far is published and confirmed: the server's position is ours.
      confirm(frame.walEnd);
    } else if (frame.replyRequested) {
      stream?.confirm(confirmed);
    }
  };
  stream = await openReplicationStream({
    knex: store.knex,
    slot: log.slot,
    publication: log.publication,
    connectMs: store.timeouts?.connectMs || DEFAULT_TIMEOUTS.connectMs,
    onFrame,
  });
  const open = stream;
  let failure: unknown = null;
  const fail = (error: unknown): void => {
    failure ??= error ?? new Error('replication stream ended');
    wake();
  };
  open.ended.then(() => fail(new Error('replication stream ended')), fail);
  const marker = new MarkerWait(rt, () => wake(), fail);
  const ask = (): void => {
    // A hand-back's marker must follow its boundary and its wait (beginHandBack).
    if (handBack.boundary === null && (handBack.wanted || !control.untilCaughtUp())) return;
    marker.write();
  };
  // The server's wal_sender_timeout ends a session that says nothing: report even when paused.
  const status = setInterval(() => open.confirm(confirmed), log.statusIntervalMs);
  status.unref();
  const poke = (): void => {
    ask();
    wake();
  };
  control.poke.addEventListener('abort', poke);
  // A stop that gave up waiting lets go of the slot at once, for a standby to take.
  const abandoned = (): void => void open.close();
  control.signal.addEventListener('abort', abandoned);
  /** The hand-back's boundary, the wait, then the marker; false when abandoned in the wait. */
  const beginHandBack = async (): Promise<boolean> => {
    backlog.remove(await handBack.begin(store, log, queue, (t, upTo) => within(t, null, upTo)));
    if (!(await waitForRunningTransactions(store.knex, control))) return false;
    ask();
    return true;
  };
  control.onView(view());
  try {
    // Only the session that holds the slot reads this: a hand-back cannot finish under it.
    await handBack.open(store, log.slot);
    ask();
    // The slot is ours alone while the stream is open: no other relay publishes the leftovers.
    if (cutOver !== null && !cutOver.done) {
      if (!(await publishLeftovers(rt, log, cutOver.boundary, control))) return 'stopped';
    }
    for (;;) {
      if (failure !== null) throw failure;
      if (handBack.boundary === null && handBack.wanted && !(await beginHandBack())) {
        return 'stopped';
      }
      if (control.stopping()) return 'stopped';
      if (queue.length === 0) {
        if (marker.reached) {
          if (handBack.boundary !== null) return handBack.finish(rt, log);
          if (control.untilCaughtUp()) return 'stopped';
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = () => undefined;
        continue;
      }
      const batch = nextBatch(queue, headDone, batchSize);
      if (!(await publishEvents(rt, batch.rows, control))) return 'stopped';
      // Done: the whole transactions leave the queue; a part advances into the head.
      const finished = queue.splice(0, batch.complete);
      headDone = batch.headDone;
      backlog.remove(batch.rows.length);
      if (finished.length > 0) confirm(finished[finished.length - 1]!.endLsn);
      for (const t of finished) marker.confirmed(t);
      control.onView(view());
    }
  } finally {
    clearInterval(status);
    control.poke.removeEventListener('abort', poke);
    control.signal.removeEventListener('abort', abandoned);
    control.onView(null);
    await open.close();
  }
}

/**
 * A transaction without the events that are not the log relay's: those up to the cut-over's
 * boundary (`after`: in the table when the relay took over from polling, published from
 * there) and those above a hand-back's boundary (`upTo`: the polling relays publish them).
 */
function within(t: LogTransaction, after: bigint | null, upTo: bigint | null): LogTransaction {
  if (after === null && upTo === null) return t;
  const events = t.events.filter((event) => {
    const id = BigInt(event.id);
    return (after === null || id > after) && (upTo === null || id <= upTo);
  });
  return events.length === t.events.length ? t : { ...t, events };
}

/** The next batch: whole transactions from the head while they fit, else a part of the head. */
export function nextBatch(
  queue: readonly LogTransaction[],
  headDone: number,
  batchSize: number,
): { rows: ClaimedRow[]; complete: number; headDone: number } {
  const rows: ClaimedRow[] = [];
  let complete = 0;
  for (const [i, transaction] of queue.entries()) {
    const events = i === 0 ? transaction.events.slice(headDone) : transaction.events;
    if (rows.length + events.length <= batchSize) {
      rows.push(...events);
      complete += 1;
      continue;
    }
    if (i === 0) {
      // A transaction larger than a batch: its first part; its end is confirmed with its last.
      return { rows: events.slice(0, batchSize), complete: 0, headDone: headDone + batchSize };
    }
    break;
  }
  return { rows, complete, headDone: 0 };
}
