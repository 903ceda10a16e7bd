import type { Knex } from 'knex';
import type { StatementStore } from '../store/prepared';
import type { Store } from '../store/store';
import { claimBatch, type Claim, type ClaimRequest, type ClaimedRow } from './sql/claim';
import { deletePublishedBatch } from './sql/cleanup';
import { readFollowers } from './sql/followers';
import { markFailed, markPublished, type FailureMark } from './sql/mark';
import { perKeyClaimBatch, perKeyClaimByKeys } from './sql/per-key/claim';
import { perKeyDeletePublishedBatch } from './sql/per-key/cleanup';
import { perKeyReadFollowers } from './sql/per-key/followers';
import { perKeyMark } from './sql/per-key/mark';
import { claimByKeys, type KeyCursor } from './sql/scan-keys';
import type { RelayClaim } from './types';

/** The marks of one published batch. @internal */
export interface BatchMarks {
  readonly published: readonly string[];
  readonly failures: readonly FailureMark[];
}

/**
 * The statements a relay's cycle runs, one set per `claim` option: the cycle, its lanes and
 * `cleanup` are the same for both, only what they send differs. @internal
 */
export interface RelayStatements {
  /** Claims a batch (see `claimBatch`). */
  claim(trx: Knex.Transaction, store: StatementStore, request: ClaimRequest): Promise<Claim>;
  /** Claims heads beyond the window by walking the keys (see `claimByKeys`). */
  claimByKeys(
    trx: Knex.Transaction,
    store: StatementStore,
    cursor: KeyCursor,
    keys: number,
    exclude: readonly string[],
    limit: number,
  ): Promise<ClaimedRow[]>;
  /** Reads the next events of held keys (see `readFollowers`). */
  readFollowers(
    trx: Knex.Transaction,
    store: StatementStore,
    cursors: ReadonlyMap<string, string>,
    limit: number,
  ): Promise<ClaimedRow[]>;
  /** Marks a published batch; resolves to how many were marked published and the ids gone dead. */
  mark(
    trx: Knex.Transaction,
    store: StatementStore,
    batch: readonly ClaimedRow[],
    marks: BatchMarks,
    remove: boolean,
  ): Promise<{ published: number; dead: string[] }>;
  /** Deletes at most `limit` events published more than `olderThanMs` ago; resolves to how many. */
  deletePublished(store: Store, olderThanMs: number, limit: number): Promise<number>;
}

/** One statement per batch: the heads of many keys locked together. */
const BATCH: RelayStatements = {
  claim: claimBatch,
  claimByKeys,
  readFollowers,
  async mark(trx, store, _batch, marks, remove) {
    const published = await markPublished(trx, store, marks.published, remove);
    return { published, dead: await markFailed(trx, store, marks.failures) };
  },
  deletePublished: (store, olderThanMs, limit) =>
    deletePublishedBatch(store.knex, store.names, olderThanMs, limit),
};

/** One statement per key, each naming the key's distribution column (docs/scaling.md). */
const PER_KEY: RelayStatements = {
  claim: perKeyClaimBatch,
  claimByKeys: perKeyClaimByKeys,
  readFollowers: perKeyReadFollowers,
  mark: perKeyMark,
  deletePublished: perKeyDeletePublishedBatch,
};

/** The statements of a relay with the given `claim` option. @internal */
export function relayStatements(claim: RelayClaim): RelayStatements {
  return claim === 'per-key' ? PER_KEY : BATCH;
}
