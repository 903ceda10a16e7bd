import type { Migration } from '../migration';

/**
 * Values kept exactly as given.
 *
 * - `idempotency.response` becomes `json`: `jsonb` reorders object keys, so a replayed
 *   response was not byte-identical to the first. `json` keeps the text as written (and
 *   accepts `\u0000` escapes, which `jsonb` refuses).
 * - `dead_letters.raw` holds, as JSON text, the id, scope, key and headers of a letter whose
 *   text fields PostgreSQL cannot store as given (U+0000, lone surrogates); the text columns
 *   then hold an escaped form for listing, and this column the exact values.
 */
export const m006ExactText: Migration = {
  version: 6,
  name: 'exact_text',
  up: ({ table }) => [
    `alter table ${table('idempotency')} alter column response type json using response::json`,
    `alter table ${table('dead_letters')} add column raw text`,
  ],
};
