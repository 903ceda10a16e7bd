/**
 * The rows of the semantics table (docs/http.md) about first responses, replays and the
 * fingerprint, for each adapter: what a repeated key gets back, byte for byte.
 */
import { ADAPTERS } from './support/adapters';
import { runTable } from './support/harness';
import { REPLAY_ROWS } from './rows/replay';

runTable(ADAPTERS, REPLAY_ROWS);
