/**
 * The rows of the semantics table (docs/http.md) about what the handler's outcome leaves:
 * stored statuses, rolled-back ones, thrown errors, a request still running, expiry, and a
 * response too large to store; for each adapter.
 */
import { ADAPTERS } from './support/adapters';
import { runTable } from './support/harness';
import { FAILURE_ROWS } from './rows/failures';

runTable(ADAPTERS, FAILURE_ROWS);
