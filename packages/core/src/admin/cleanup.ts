import {
  durationOption,
  integerOption,
  optionKeys,
  optionalFunction,
  rejectUnknownOptions,
} from '../config/options';
import { deletePublishedBatch } from '../relay/sql/cleanup';
import { createRetention } from '../retention/create-retention';
import type { Store } from '../store/store';
import type { AdminCleanupOptions, AdminCleanupResult } from './types';

const CLEANUP_KEYS = optionKeys<AdminCleanupOptions>()([
  'retentionMs',
  'deadLetterRetentionMs',
  'publishedOutboxMs',
  'batchSize',
  'onBatch',
]);

/**
 * `Admin.cleanup`: one retention pass run to the end (no batch limit: an operator asked for
 * it now), then the relay's cleanup of published outbox rows, batch by batch through the
 * same statement `Relay.cleanup` runs, so no relay (and no publisher) is needed. @internal
 */
export async function runCleanup(
  store: Store,
  options: AdminCleanupOptions = {},
): Promise<AdminCleanupResult> {
  rejectUnknownOptions(options, CLEANUP_KEYS, 'cleanup');
  const publishedOutboxMs = durationOption(
    options.publishedOutboxMs,
    'publishedOutboxMs',
    24 * 3_600_000,
    0,
  );
  const batchSize = integerOption(options.batchSize, 'batchSize', 1000, 1, 100_000);
  const onBatch = optionalFunction<NonNullable<AdminCleanupOptions['onBatch']>>(
    options.onBatch,
    'onBatch',
  );
  // createRetention validates its own options (retentionMs, deadLetterRetentionMs).
  const retention = createRetention({
    store,
    batchSize,
    maxBatchesPerRun: Number.MAX_SAFE_INTEGER,
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    ...(options.deadLetterRetentionMs === undefined
      ? {}
      : { deadLetterRetentionMs: options.deadLetterRetentionMs }),
    ...(onBatch === undefined ? {} : { onBatch }),
  });
  const result = await retention.runOnce();
  let outboxDeleted = 0;
  for (;;) {
    const started = performance.now();
    const deleted = await deletePublishedBatch(
      store.knex,
      store.names,
      publishedOutboxMs,
      batchSize,
    );
    outboxDeleted += deleted;
    onBatch?.({ table: 'outbox', deleted, durationMs: performance.now() - started });
    if (deleted < batchSize) break;
  }
  return { ...result, deleted: result.deleted + outboxDeleted, outboxDeleted };
}
