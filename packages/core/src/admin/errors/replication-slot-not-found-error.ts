import { JustonceError } from '../../errors/justonce-error';

/**
 * The store's database has no logical replication slot of that name (PGlite and MySQL have
 * none at all). Nothing was dropped: slots of other databases and physical slots are not the
 * admin's to drop. `details.database` names the database looked in, when known.
 */
export class ReplicationSlotNotFoundError extends JustonceError {
  constructor(name: string, database: string | null, note?: string) {
    super(
      'REPLICATION_SLOT_NOT_FOUND',
      `no logical replication slot ${name} in ${database === null ? "the store's database" : `database ${database}`}${note === undefined ? '' : ` (${note})`}`,
      { retriable: false, details: { slot: name, database } },
    );
  }
}
