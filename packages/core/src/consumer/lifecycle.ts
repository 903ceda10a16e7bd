import { JustonceError } from '../errors/justonce-error';

/** How {@link Consumer.stop} ends the work in flight. */
export interface ConsumerStopOptions {
  /**
   * `true` (default): stop taking deliveries, let those in flight finish and settle them.
   * `false`: stop at once; deliveries in flight are given back to the broker unsettled (it
   * redelivers them; the inbox drops what had committed).
   */
  readonly drain?: boolean;
  /** With `drain`, how long to wait for work in flight before giving it back. Default 30 000. */
  readonly timeoutMs?: number;
}

/**
 * What every transport's consumer is: a broker subscription wrapped around an inbox, with
 * one lifecycle. `start` once; `stop` any number of times (later calls wait for the first).
 */
export interface Consumer {
  /**
   * Connects and starts consuming; resolves once deliveries flow. Throws
   * {@link ConsumerStateError} when called a second time, or after `stop`: a stopped consumer
   * is not restarted, create a new one.
   */
  start(): Promise<void>;
  /** Stops consuming (see {@link ConsumerStopOptions}) and closes what `start` opened. Idempotent. */
  stop(options?: ConsumerStopOptions): Promise<void>;
  /** Whether the consumer has started and not begun to stop. */
  readonly running: boolean;
}

/** A consumer used against its lifecycle: started twice, or started after it stopped. */
export class ConsumerStateError extends JustonceError {
  constructor(
    readonly consumer: string,
    readonly state: 'starting' | 'running' | 'stopping' | 'stopped',
  ) {
    const hint =
      state === 'stopping' || state === 'stopped'
        ? 'a stopped consumer cannot be started again; create a new one'
        : 'start() may be called once';
    super('CONSUMER_STATE', `${consumer} is ${state}: ${hint}`, {
      retriable: false,
      details: { consumer, state },
    });
  }
}

/** The broker mechanics a transport plugs into {@link consumerLifecycle}. */
export interface LifecycleHooks {
  /** Opens connections and subscribes. A throw leaves the consumer stopped, after `stop`. */
  start(): Promise<void>;
  /** Stops taking deliveries, ends the work in flight as `options` say, closes connections. */
  stop(options: Required<ConsumerStopOptions>): Promise<void>;
  /**
   * The consumer's inbox: once the work in flight has ended, its activity counts (handled,
   * duplicates, dead-lettered) are written, so a stopped consumer leaves none unrecorded.
   */
  readonly inbox?: { flushActivity(): Promise<void> };
}

const DEFAULT_STOP: Required<ConsumerStopOptions> = { drain: true, timeoutMs: 30_000 };

/**
 * The one lifecycle of every consumer: `start` runs once (a second call, or one after `stop`,
 * throws {@link ConsumerStateError}); `stop` before `start` just marks it stopped; `stop`
 * during `start` waits for the start, then stops; every `stop` returns the first one's
 * promise. A failed start stops what it opened and rethrows.
 */
export function consumerLifecycle(name: string, hooks: LifecycleHooks): Consumer {
  let state: 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' = 'idle';
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  const stop = (options: ConsumerStopOptions = {}): Promise<void> => {
    if (stopping !== undefined) return stopping;
    if (state === 'idle') {
      state = 'stopped';
      stopping = Promise.resolve();
      return stopping;
    }
    state = 'stopping';
    const settings = { ...DEFAULT_STOP, ...options };
    stopping = (async () => {
      // A stop during start waits for it, so no connection opened by it is left behind.
      await starting?.catch(() => undefined);
      try {
        await hooks.stop(settings);
      } finally {
        state = 'stopped';
        // Never rejects: a failed write is logged by the inbox.
        await hooks.inbox?.flushActivity();
      }
    })();
    return stopping;
  };

  const start = (): Promise<void> => {
    if (state !== 'idle') return Promise.reject(new ConsumerStateError(name, state));
    state = 'starting';
    starting = (async () => {
      try {
        await hooks.start();
      } catch (error) {
        if (state === 'starting') {
          state = 'stopping';
          await hooks.stop({ drain: false, timeoutMs: 0 }).catch(() => undefined);
          state = 'stopped';
          stopping = Promise.resolve();
        }
        throw error;
      }
      if (state === 'starting') state = 'running';
    })();
    return starting;
  };

  return {
    start,
    stop,
    get running() {
      return state === 'running';
    },
  };
}
