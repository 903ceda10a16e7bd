import type { Knex } from 'knex';
import type { StatementStore } from '../../../store/prepared';
import { prepared } from '../../../store/prepared';
import { ascendingId, idAfter } from '../../row-order';
import type { Claim, ClaimRequest, ClaimedRow } from '../claim';
import type { KeyCursor } from '../scan-keys';
import { readWindowCandidates, walkKeys, type Candidate } from './candidates';
import { claimCandidate } from './lock';
import { perKeyReadFollowers } from './followers';

/**
 * How many keys a claim takes: as many as the oldest heads whose events in the window add up
 * to the batch, and at least `minKeys` (the rule of the batch claim's `needed`).
 */
function keysNeeded(heads: readonly Candidate[], limit: number, minKeys: number): number {
  let before = 0;
  let keys = 0;
  for (const head of heads) {
    if (before >= limit) break;
    keys += 1;
    before += head.events;
  }
  return Math.max(minKeys, keys);
}

/**
 * The batch out of what was locked: the lowest `(rank, id)` up to `limit`, where a key's head
 * and an event without a key rank 1 and a key's followers 2, 3, … in id order; so what is
 * taken of each key is a prefix of its events. In id order.
 */
function pick(keys: readonly ClaimedRow[][], keyless: readonly ClaimedRow[], limit: number) {
  const ranked: Array<{ rank: number; row: ClaimedRow }> = keyless.map((row) => ({
    rank: 1,
    row,
  }));
  for (const rows of keys) rows.forEach((row, i) => ranked.push({ rank: i + 1, row }));
  ranked.sort((a, b) => a.rank - b.rank || ascendingId(a.row, b.row));
  return ranked
    .slice(0, limit)
    .map((r) => r.row)
    .sort(ascendingId);
}

/**
 * When fewer keys were taken than their shares assumed (some were held elsewhere) and the
 * batch has room, the keys that filled their share get more of their next events, read per
 * key as the lanes read them: the batch then holds what the batch claim would have taken.
 */
async function topUp(
  trx: Knex.Transaction,
  store: StatementStore,
  keys: ClaimedRow[][],
  followers: number,
  limit: number,
): Promise<void> {
  const taken = keys.reduce((sum, rows) => sum + rows.length, 0);
  const full = keys.filter((rows) => rows.length === followers + 1);
  if (taken >= limit || full.length === 0 || followers === 0) return;
  const cursors = new Map(full.map((rows) => [rows[0]!.partition_key!, rows[rows.length - 1]!.id]));
  const more = await perKeyReadFollowers(trx, store, cursors, limit - taken);
  const byKey = new Map(full.map((rows) => [rows[0]!.partition_key!, rows]));
  for (const row of more) byKey.get(row.partition_key!)!.push(row);
}

const lease = `select set_config('idle_in_transaction_session_timeout', ?, true)`;

/**
 * The per-key claim (relay option `claim: 'per-key'`): every statement that locks names the
 * row's distribution key by equality, so that on a distributed table each goes to one shard.
 * It reads the candidates without locks ({@link readWindowCandidates}), then claims keys one
 * statement each, oldest head first, passing over heads held elsewhere or not due, until it
 * holds as many keys as the batch needs (as the batch claim does), each with its fair share
 * of the batch; then events without a key, each locked alone, while the batch has room. A
 * round trip per key instead of one per batch. With `leaseMs`, the transaction's
 * `idle_in_transaction_session_timeout` is set first, in a statement that reads no table.
 * @internal
 */
export async function perKeyClaimBatch(
  trx: Knex.Transaction,
  store: StatementStore,
  request: ClaimRequest,
): Promise<Claim> {
  const { limit } = request;
  if (request.leaseMs !== null) await prepared(store, trx, lease, [String(request.leaseMs)]);
  const found = await readWindowCandidates(trx, store, request);
  const needed = keysNeeded(found.heads, limit, request.minKeys ?? 1);
  // Each key's share of the batch, as if every due head up to `needed` is taken; a key that
  // another relay holds leaves its share to the others (see topUp).
  const due = found.heads.filter((head) => head.due).length;
  const followers = Math.max(1, Math.ceil(limit / Math.max(1, Math.min(needed, due)))) - 1;
  const keys: ClaimedRow[][] = [];
  for (const head of found.heads) {
    if (keys.length >= needed) break;
    if (!head.due) continue;
    const rows = await claimCandidate(trx, store, head, followers);
    if (rows.length > 0) keys.push(rows);
  }
  await topUp(trx, store, keys, followers, limit);
  const keyless: ClaimedRow[] = [];
  for (const event of found.keyless) {
    if (keys.length + keyless.length >= limit) break;
    keyless.push(...(await claimCandidate(trx, store, event, 0)));
  }
  return { rows: pick(keys, keyless, limit), windowFull: found.windowRows >= request.window };
}

/**
 * The per-key form of `claimByKeys` (`scan-keys.ts`): walks at most `rows` pending keyed events
 * in key order after `cursor.key` without locks ({@link walkKeys}), and claims the heads found,
 * leaving out `exclude`, one statement each, at most `limit` of them; moves the cursor on
 * (back to the start once the walk reached the last key). @internal
 */
export async function perKeyClaimByKeys(
  trx: Knex.Transaction,
  store: StatementStore,
  cursor: KeyCursor,
  rows: number,
  exclude: readonly string[],
  limit: number,
): Promise<ClaimedRow[]> {
  const walked = await walkKeys(trx, store, cursor.key, rows);
  cursor.key = walked.next;
  const skip = new Set(exclude);
  const claimed: ClaimedRow[] = [];
  const heads = walked.heads
    .filter((head) => head.due && !skip.has(head.key!))
    .sort((a, b) => (a.id === b.id ? 0 : idAfter(a.id, b.id) ? 1 : -1));
  for (const head of heads) {
    if (claimed.length >= limit) break;
    claimed.push(...(await claimCandidate(trx, store, head, 0)));
  }
  return claimed.sort(ascendingId);
}
