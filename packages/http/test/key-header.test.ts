/**
 * The rows of the semantics table (docs/http.md) about the Idempotency-Key field itself and
 * the scope: what is refused before the handler runs, for each adapter.
 */
import { ADAPTERS } from './support/adapters';
import { runTable } from './support/harness';
import { KEY_HEADER_ROWS } from './rows/key-header';

runTable(ADAPTERS, KEY_HEADER_ROWS);
