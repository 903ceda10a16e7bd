/**
 * The light subset of the semantics table on PGlite, for each adapter: keys, replays,
 * conflicts and rollbacks work the same on the embedded database. Rows that need two
 * requests in flight at once stay on PostgreSQL: PGlite has one connection, which a running
 * handler's transaction holds.
 */
import { ADAPTERS } from './support/adapters';
import { runTable } from './support/harness';
import { FAILURE_ROWS } from './rows/failures';
import { KEY_HEADER_ROWS } from './rows/key-header';
import { REPLAY_ROWS } from './rows/replay';

const LIGHT = [...KEY_HEADER_ROWS, ...REPLAY_ROWS, ...FAILURE_ROWS].filter(
  (row) => row.pglite === true,
);

it('has a light subset', () => {
  expect(LIGHT.length).toBeGreaterThanOrEqual(8);
});

runTable(ADAPTERS, LIGHT, 'pglite');
