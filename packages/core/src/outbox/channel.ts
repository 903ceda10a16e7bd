import { createHash } from 'node:crypto';
import type { MigrationNames } from '../store/migration';

/**
 * The LISTEN/NOTIFY channel of one outbox table: derived from its validated, qualified name
 * (hashed, so it stays a short plain identifier whatever the schema and prefix are).
 */
export function outboxChannel(names: MigrationNames): string {
  const digest = createHash('sha256').update(names.table('outbox')).digest('hex');
  return `justonce_outbox_${digest.slice(0, 16)}`;
}
