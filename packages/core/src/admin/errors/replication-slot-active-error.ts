import { JustonceError } from '../../errors/justonce-error';

/**
 * The replication slot could not be dropped: a connection is reading it (a running log relay,
 * or another replication client). Nothing was dropped. Stop its reader first; PostgreSQL
 * names the reading process, whose id is in `details.pid` when it said which.
 */
export class ReplicationSlotActiveError extends JustonceError {
  constructor(name: string, pid: number | null, cause?: unknown) {
    super(
      'REPLICATION_SLOT_ACTIVE',
      `replication slot ${name} is being read${pid === null ? '' : ` by process ${pid}`}: stop its reader before dropping it`,
      { retriable: false, details: { slot: name, pid }, cause },
    );
  }
}
