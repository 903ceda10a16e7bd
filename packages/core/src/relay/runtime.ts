import type { Knex } from 'knex';
import { outboxChannel } from '../outbox/channel';
import type { Listener } from './listener';
import { createRelayInstruments, type RelayInstruments } from './metrics';
import type { ResolvedRelayOptions } from './options';
import { createPublishGate, type PublishGate } from './publish-gate';
import { RateWindow } from './rate';
import type { KeyCursor } from './sql/scan-keys';
import { Waker } from './waker';

/** Where a relay's lifecycle stands; changed by `start`, `stop` and the loops. @internal */
export interface RelayState {
  running: boolean;
  stopping: boolean;
  draining: boolean;
  /** Set when a stop timed out: cycles still waiting for a connection claim nothing. */
  abandoned: boolean;
  loops: Promise<void>[];
  listener: Listener | null;
  stopObserving: (() => void) | null;
}

/** What the functions of one relay share. @internal */
export interface RelayRuntime {
  readonly options: ResolvedRelayOptions;
  /** The LISTEN/NOTIFY channel of the store's outbox. */
  readonly channel: string;
  readonly instruments: RelayInstruments;
  readonly rate: RateWindow;
  readonly waker: Waker;
  /** Totals since creation, for `stats()`. */
  readonly counters: { published: number; failed: number; dead: number };
  readonly state: RelayState;
  /** Transactions of cycles in flight, so a timed-out stop can roll them back. */
  readonly open: Set<Knex.Transaction>;
  /** The last head each loop's open cycle holds, for its siblings' claims to start after. */
  readonly held: Array<string | null>;
  /** Where the relay's walk over keys stands, shared by its loops. */
  readonly keyCursor: KeyCursor;
  readonly gate: PublishGate;
}

/** Creates the runtime record of a relay, stopped, around its resolved options. @internal */
export function createRelayRuntime(options: ResolvedRelayOptions): RelayRuntime {
  return {
    options,
    channel: outboxChannel(options.store.names),
    instruments: createRelayInstruments(options.meter),
    rate: new RateWindow(10),
    waker: new Waker(),
    counters: { published: 0, failed: 0, dead: 0 },
    state: {
      running: false,
      stopping: false,
      draining: false,
      abandoned: false,
      loops: [],
      listener: null,
      stopObserving: null,
    },
    open: new Set<Knex.Transaction>(),
    held: [],
    keyCursor: { key: null, pausedUntil: 0 },
    gate: createPublishGate(options.maxConcurrentPublishes),
  };
}
