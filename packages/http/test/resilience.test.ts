/**
 * The `resilience` option of a route, for each adapter on a real server and store: 503 while
 * the breaker is open, 429 when the retry budget is spent (docs/load-shedding.md).
 */
import { ADAPTERS } from './support/adapters';
import { runTable } from './support/harness';
import { RESILIENCE_ROWS } from './rows/resilience';

runTable(ADAPTERS, RESILIENCE_ROWS);
