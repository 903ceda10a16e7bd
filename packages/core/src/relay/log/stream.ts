import type { Knex } from 'knex';
import { withTimeout } from '../../common/time';
import { decodeServerFrame, standbyStatus, type ServerFrame } from './wal-frames';

/** What the stream needs of `pg`'s connection, which a submittable query is handed. */
interface WireConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  /** Sends CopyDone: the client ends the copy; the server then ends the command. */
  endCopyFrom(): void;
  once(event: 'replicationStart', listener: () => void): unknown;
  stream?: { pause(): void; resume(): void; destroy(error?: Error): void };
}

/** What the stream needs of a `pg` client. */
interface ReplicationClient {
  connect(): Promise<unknown>;
  query(submittable: unknown): unknown;
  end(): Promise<void>;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
  connection?: WireConnection;
}

/** A `pg` client class, as knex's `pg` dialect holds it. */
type ClientClass = new (settings: unknown) => ReplicationClient;

/** An open replication stream of one slot. @internal */
export interface ReplicationStream {
  /** Resolves when the stream ends, rejects with why (the server's error, a lost connection). */
  readonly ended: Promise<void>;
  /**
   * Reports `lsn` as flushed: the slot's confirmed position moves there. `ping` asks the
   * server for a keepalive in answer.
   */
  confirm(lsn: bigint, ping?: boolean): void;
  /** Stops and restarts reading from the socket (the server then waits: flow control). */
  pause(): void;
  resume(): void;
  /** Ends the connection; what was not confirmed is sent again to the next reader. */
  close(): Promise<void>;
}

/** Where and how to open the stream. @internal */
export interface StreamTarget {
  readonly knex: Knex;
  readonly slot: string;
  readonly publication: string;
  /** Longest wait for the connection and for the server to start streaming. */
  readonly connectMs: number;
  /** Called with each frame, in order. A throw ends the stream with that error. */
  readonly onFrame: (frame: ServerFrame) => void;
}

/**
 * The store's `pg` connection settings, as knex opens its own connections, for a client of
 * our own with `replication: 'database'` (a walsender session that speaks the replication
 * protocol). A knex given by the caller may hold them as a URL string. @internal
 */
function replicationSettings(knex: Knex): {
  Client: ClientClass;
  settings: Record<string, unknown>;
} {
  const client = knex.client as unknown as {
    driver: { Client: ClientClass };
    connectionSettings: unknown;
  };
  const given = client.connectionSettings;
  const base = typeof given === 'string' ? { connectionString: given } : { ...(given as object) };
  // A walsender runs no statement_timeout-bound statements of ours; the stream is long-lived.
  const { statement_timeout: _s, query_timeout: _q, ...rest } = base as Record<string, unknown>;
  return { Client: client.driver.Client, settings: { ...rest, replication: 'database' } };
}

/**
 * Opens a replication connection and starts streaming the slot from its confirmed position
 * (`0/0` asks for exactly that: the server never sends what was confirmed), with `pgoutput`
 * protocol version 1 on the one publication, with logical messages (the relay's markers; since
 * PostgreSQL 14). Resolves once the server started streaming;
 * rejects with the server's error, e.g. 55006 when another process reads the slot. @internal
 */
export async function openReplicationStream(target: StreamTarget): Promise<ReplicationStream> {
  const { Client, settings } = replicationSettings(target.knex);
  const client = new Client(settings);
  let connection: WireConnection | undefined;
  let finish: (error?: Error) => void = () => undefined;
  const ended = new Promise<void>((resolve, reject) => {
    finish = (error) => (error === undefined ? resolve() : reject(error));
  });
  ended.catch(() => undefined);
  let started: () => void = () => undefined;
  let closing = false;
  const streaming = new Promise<void>((resolve) => {
    started = resolve;
  });
  client.on('error', (error) => finish(error ?? new Error('replication connection failed')));
  client.on('end', () => finish(new Error('replication connection ended')));
  const destroy = (error: Error): void => {
    finish(error);
    client.connection?.stream?.destroy(error);
  };
  const command = `START_REPLICATION SLOT "${target.slot}" LOGICAL 0/0 (proto_version '1', publication_names '"${target.publication}"', messages 'true')`;
  // A submittable: pg hands it the connection and each message of its (endless) query.
  const query = {
    submit(wire: WireConnection) {
      connection = wire;
      wire.once('replicationStart', started);
      wire.query(command);
    },
    handleCopyData(message: { chunk: Buffer }) {
      if (closing) return;
      const frame = decodeServerFrame(message.chunk);
      if (frame === null) return;
      try {
        target.onFrame(frame);
      } catch (error) {
        destroy(error instanceof Error ? error : new Error(String(error)));
      }
    },
    handleError(error: Error) {
      finish(error);
    },
    handleReadyForQuery() {
      finish();
    },
    handleCommandComplete: () => undefined,
    handleRowDescription: () => undefined,
    handleDataRow: () => undefined,
    handleEmptyQuery: () => undefined,
    handlePortalSuspended: () => undefined,
    handleCopyInResponse: () => undefined,
  };
  const stream: ReplicationStream = {
    ended,
    confirm(lsn, ping = false) {
      connection?.sendCopyFromChunk(standbyStatus(lsn, ping));
    },
    pause: () => connection?.stream?.pause(),
    resume: () => connection?.stream?.resume(),
    async close() {
      if (closing) return;
      closing = true;
      // Ends the copy first: pg's end() destroys the socket of a connection with a command
      // in flight, which could drop the last confirmation still in its buffer. After
      // CopyDone the server reads what came before it, ends the command, and the connection
      // can say goodbye.
      const done = ended.then(
        () => undefined,
        () => undefined,
      );
      try {
        connection?.endCopyFrom();
        await withTimeout(done, target.connectMs, 'ending the replication command');
        await withTimeout(client.end(), target.connectMs, 'closing the replication connection');
      } catch {
        client.connection?.stream?.destroy();
      } finally {
        finish();
      }
    },
  };
  try {
    await withTimeout(client.connect(), target.connectMs, 'connecting for replication');
    client.query(query);
    await withTimeout(Promise.race([streaming, ended]), target.connectMs, 'starting replication');
    // The query can only end here by failing: `ended` rejects with the server's error.
    return stream;
  } catch (error) {
    client.connection?.stream?.destroy();
    await client.end().catch(() => undefined);
    throw error;
  }
}
