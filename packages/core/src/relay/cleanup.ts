import { integerOption } from '../config/options';
import { ConfigurationError } from '../errors/configuration-error';
import { NO_LIMIT } from './options';
import type { RelayRuntime } from './runtime';
import { relayStatements } from './statements';
import type { CleanupOptions } from './types';

/** {@link CleanupOptions} with defaults applied and checked: one reading for both modes. @internal */
export function cleanupLimits(cleanupOptions: CleanupOptions): {
  olderThanMs: number;
  batchSize: number;
  maxBatches: number;
} {
  const olderThanMs = integerOption(
    cleanupOptions.olderThanMs,
    'olderThanMs',
    24 * 3_600_000,
    0,
    NO_LIMIT,
  );
  const batchSize = integerOption(cleanupOptions.batchSize, 'batchSize', 1_000, 1, NO_LIMIT);
  const maxBatches = cleanupOptions.maxBatches ?? Number.POSITIVE_INFINITY;
  if (!(maxBatches >= 1)) {
    throw new ConfigurationError('maxBatches must be at least 1', { maxBatches });
  }
  return { olderThanMs, batchSize, maxBatches };
}

/**
 * `Relay.cleanup`: deletes published rows older than `olderThanMs`, `batchSize` at a time,
 * until a batch comes back short or `maxBatches` ran; resolves to how many went. @internal
 */
export async function cleanupPublished(
  rt: RelayRuntime,
  cleanupOptions: CleanupOptions = {},
): Promise<number> {
  const { olderThanMs, batchSize, maxBatches } = cleanupLimits(cleanupOptions);
  const { store, claim } = rt.options;
  const statements = relayStatements(claim);
  let total = 0;
  for (let batch = 0; batch < maxBatches; batch += 1) {
    const deleted = await statements.deletePublished(store, olderThanMs, batchSize);
    total += deleted;
    if (deleted < batchSize) break;
  }
  return total;
}
