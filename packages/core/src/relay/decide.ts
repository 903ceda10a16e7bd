import { errorText } from '../common/errors';
import { fullJitterBackoff } from '../retry/backoff';
import type { OutgoingMessage, PublishResult } from '../transport/publisher';
import type { ResolvedRelayOptions } from './options';
import type { ClaimedRow } from './sql/claim';
import type { FailureMark } from './sql/mark';
import { storedHeaders } from '../outbox/sql/headers';

/** What the relay decided for each claimed row. @internal */
export interface Decisions {
  readonly published: string[];
  readonly failures: FailureMark[];
  readonly released: string[];
  /** Keys whose publisher result broke per-key order (a success after a failure). */
  readonly disorderedKeys: string[];
  /** Keys with a failure: nothing more of them may go out before the marks commit. */
  readonly blockedKeys: string[];
}

/** The message a claimed row is published as. @internal */
export function toMessage(row: ClaimedRow): OutgoingMessage {
  const headers = storedHeaders(row.headers);
  return {
    messageId: row.message_id,
    destination: row.destination,
    key: row.partition_key,
    headers,
    payload: row.payload,
  };
}

/**
 * An error as `last_error` keeps it: storable, since a broker's message may quote the
 * event itself, and a U+0000 in it would fail the whole claiming transaction. @internal
 */
export function lastError(error: unknown): string {
  return errorText(error instanceof Error ? `${error.name}: ${error.message}` : error);
}

/** Backoff step for an uncharged retry during an outage: a few base delays, not the first. */
const OUTAGE_ATTEMPT = 4;

/**
 * Turns publish results into marks. Per key, in id order: successes up to the first failure
 * are published; the first failure counts an attempt (backoff, or dead after the last one),
 * unless the whole call failed (an outage: retried, never charged);
 * the rest of the key is released untouched, so a failing event holds back only its own key.
 * Events without a key are independent of each other. @internal
 */
export function decide(
  rows: readonly ClaimedRow[],
  outcome: readonly PublishResult[] | Error,
  options: Pick<ResolvedRelayOptions, 'maxAttempts' | 'backoff'>,
): Decisions {
  const published: string[] = [];
  const failures: FailureMark[] = [];
  const released: string[] = [];
  const disordered = new Set<string>();
  const blocked = new Set<string>();
  const failedCall = outcome instanceof Error ? outcome : null;
  const results = outcome instanceof Error ? [] : outcome;
  for (let i = 0; i < rows.length; i += 1) {
    const row = rows[i]!;
    let result: PublishResult | undefined = results[i];
    if (failedCall !== null) {
      result = { messageId: row.message_id, ok: false, error: failedCall, retriable: true };
    } else if (result === undefined || result.messageId !== row.message_id) {
      result = {
        messageId: row.message_id,
        ok: false,
        error: new Error('the publisher returned no result for this message'),
        retriable: true,
      };
    }
    const key = row.partition_key;
    if (key !== null && blocked.size > 0 && blocked.has(key)) {
      if (result.ok) {
        // Already out at the broker: record it, but the key's order is the publisher's fault.
        disordered.add(key);
        published.push(row.id);
      } else {
        released.push(row.id);
      }
      continue;
    }
    if (result.ok) {
      published.push(row.id);
      continue;
    }
    const attempt = row.attempts + 1;
    // A failed call, or a failure the publisher calls an outage, is the broker's, never the
    // event's: retried with backoff for as long as it lasts, never charged, never dead.
    const charged = failedCall === null && result.outage !== true;
    failures.push({
      id: row.id,
      error: lastError(result.error),
      delayMs: fullJitterBackoff(
        charged ? attempt : Math.max(attempt, OUTAGE_ATTEMPT),
        options.backoff,
      ),
      dead: charged && (!result.retriable || attempt >= options.maxAttempts),
      charged,
    });
    if (key !== null) blocked.add(key);
  }
  return {
    published,
    failures,
    released,
    disorderedKeys: [...disordered],
    blockedKeys: [...blocked],
  };
}
