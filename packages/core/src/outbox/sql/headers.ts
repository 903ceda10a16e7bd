/**
 * The headers of an outbox row as the driver returns its `jsonb` column: parsed already
 * (node-postgres) or as JSON text (PGlite, some knex set-ups). @internal
 */
export function storedHeaders(value: Record<string, string> | string): Record<string, string> {
  return typeof value === 'string' ? (JSON.parse(value) as Record<string, string>) : value;
}
