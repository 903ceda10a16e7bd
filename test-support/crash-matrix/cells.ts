/**
 * The crash-point matrix as data: every named crash point (core's `crashPoint(name)` calls)
 * × the transports it applies to × their consumer modes. Each cell names the scenario that
 * runs it (`scenarios.ts`); the runner (`run-matrix.ts`) kills a child process at the point
 * with `JUSTONCE_CRASH_AT`, restarts it without until everything is processed, and counts
 * the effects per message.
 */

/** Where the cell's messages come from and go to. */
export type MatrixTransport = 'kafka' | 'sqs' | 'rabbitmq' | 'memory' | 'http' | 'cli';

/** The broker transports a consumer runs on. */
export type BrokerTransport = Extract<MatrixTransport, 'kafka' | 'sqs' | 'rabbitmq' | 'memory'>;

/**
 * How the cell's process works: a consumer's `message` or `batch` mode; `relay`, the polling
 * relay beside a consumer; `fetch`, the HTTP adapter on node:http; `requeue`, `justonce
 * dead-letters requeue`.
 */
export type MatrixMode = 'message' | 'batch' | 'relay' | 'fetch' | 'requeue';

/**
 * What a cell runs: `consumer` publishes every message twice to the broker, then consumes;
 * `relay` adds them to the outbox (and publishes a copy of each straight to the broker) for
 * the relay to publish; `http` sends each request twice; `cli` requeues dead letters.
 */
export type Scenario = 'consumer' | 'relay' | 'http' | 'cli';

/** One cell of the matrix. */
export interface MatrixCell {
  /** The crash point, as `JUSTONCE_CRASH_AT` names it. */
  readonly point: string;
  readonly transport: MatrixTransport;
  readonly mode: MatrixMode;
  readonly scenario: Scenario;
  /** The child dies the `nth` time it reaches the point, so some work is done before. */
  readonly nth: number;
}

/** The cell's name in the table and for `--only`: `point × transport × mode`. */
export function cellName(cell: Pick<MatrixCell, 'point' | 'transport' | 'mode'>): string {
  return `${cell.point} × ${cell.transport} × ${cell.mode}`;
}

const BROKERS: readonly BrokerTransport[] = ['kafka', 'sqs', 'rabbitmq', 'memory'];
const RELAYED: readonly BrokerTransport[] = ['kafka', 'sqs', 'rabbitmq'];

/** Crash points every consumer passes, in both modes. */
const CONSUMER_POINTS = [
  // Attempt counted, record claimed, transaction open; the handler has not run.
  'inbox.before-handler',
  // The handler's write is in the open transaction (in batch mode: every handler's).
  'inbox.after-handler',
  // The transaction committed; the broker has not been acknowledged.
  'consumer.after-commit-before-ack',
] as const;

/** Crash points of the relay (polling, to a real broker). */
const RELAY_POINTS = [
  // Rows claimed in the open transaction, nothing published.
  'relay.after-claim',
  // The broker has the batch; it is not marked published.
  'relay.after-publish',
  // A NOTIFY from the enqueuing transaction woke the relay.
  'relay.notify',
] as const;

function consumerCells(): MatrixCell[] {
  const cells: MatrixCell[] = [];
  for (const transport of BROKERS) {
    for (const mode of ['message', 'batch'] as const) {
      for (const point of CONSUMER_POINTS) {
        cells.push({ point, transport, mode, scenario: 'consumer', nth: 2 });
      }
      // Another handler's work is in the open batch transaction, and more are to run.
      if (mode === 'batch') {
        cells.push({ point: 'batch.mid', transport, mode, scenario: 'consumer', nth: 1 });
      }
    }
    // Between a `ctx.once` step's effect (a remote call) and its record: the handler makes
    // the call through `ctx.once` before its business write (broker-cell.ts).
    cells.push({
      point: 'once.after-effect',
      transport,
      mode: 'message',
      scenario: 'consumer',
      nth: 2,
    });
  }
  return cells;
}

/** Every cell, in the order the table lists them. */
export const CELLS: readonly MatrixCell[] = [
  ...consumerCells(),
  ...RELAY_POINTS.flatMap((point) =>
    RELAYED.map((transport): MatrixCell => ({
      point,
      transport,
      mode: 'relay',
      scenario: 'relay',
      nth: 1,
    })),
  ),
  // The response of a committed request is lost with the process; the client retries its key.
  { point: 'http.after-commit', transport: 'http', mode: 'fetch', scenario: 'http', nth: 2 },
  // The requeue loop dies between two letters; the operator runs it again.
  { point: 'cli.requeue', transport: 'cli', mode: 'requeue', scenario: 'cli', nth: 2 },
];

/** The cells whose name contains `filter` (all of them without one). */
export function selectCells(filter: string | undefined): MatrixCell[] {
  if (filter === undefined || filter === '') return [...CELLS];
  return CELLS.filter((cell) => cellName(cell).includes(filter));
}
