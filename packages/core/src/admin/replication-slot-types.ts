/** The replication slot types of the admin API (`admin.replicationSlots()`, `status().slots`). */

/**
 * How safe the WAL a replication slot needs is (PostgreSQL's `wal_status`): `reserved`, within
 * `max_wal_size`; `extended`, beyond it but kept for the slot (by `wal_keep_size` or because
 * `max_slot_wal_keep_size` is unlimited); `unreserved`, past `max_slot_wal_keep_size`: the
 * next checkpoint removes it unless the slot catches up; `lost`, removed: the slot can never
 * be read again.
 */
export type ReplicationSlotWalStatus = 'reserved' | 'extended' | 'unreserved' | 'lost';

/**
 * A logical replication slot of the store's database, as `pg_replication_slots` and the
 * slot's walsender (`pg_stat_replication`) describe it. A slot keeps every byte of WAL from
 * its `restartLsn` on until its reader confirms it: an abandoned slot fills the disk.
 */
export interface ReplicationSlotStatus {
  /** The slot's name. */
  readonly name: string;
  /** Its output plugin, `pgoutput` for a log relay. */
  readonly plugin: string;
  /** Whether a connection is reading it now. */
  readonly active: boolean;
  /** The process id of the walsender reading it, `null` when inactive. */
  readonly activePid: number | null;
  /** The oldest WAL position the slot still needs (`null` once its WAL is lost). */
  readonly restartLsn: string | null;
  /** The position its reader confirmed, up to which it will not be sent again. */
  readonly confirmedFlushLsn: string | null;
  /** Whether the WAL it needs is safe; `null` where PostgreSQL does not say (before 13). */
  readonly walStatus: ReplicationSlotWalStatus | null;
  /**
   * Bytes of WAL that can still be written before the slot is at risk of `lost`; `null` when
   * `max_slot_wal_keep_size` is unlimited (the default) or the slot is lost.
   */
  readonly safeWalSizeBytes: number | null;
  /** WAL written since the confirmed position, in bytes: what the reader has still to confirm. */
  readonly lagBytes: number | null;
  /** WAL kept on disk for the slot (from `restartLsn` to now), in bytes. */
  readonly retainedBytes: number | null;
  /**
   * How far behind its reader is, in seconds: 0 when it confirmed everything written; for an
   * active slot, its walsender's last `flush_lag` (the time between writing WAL and the
   * reader confirming it); `null` when PostgreSQL cannot tell (an inactive slot, or an active
   * one whose walsender has not measured yet).
   */
  readonly lagSeconds: number | null;
  /**
   * When the slot was last released (PostgreSQL 17's `inactive_since`); `null` while active,
   * and always on PostgreSQL before 17, which does not record it.
   */
  readonly inactiveSince: Date | null;
}
