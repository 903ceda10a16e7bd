import { ConfigurationError } from '../errors/configuration-error';
import type { Store } from '../store/store';

/**
 * The schema or one of justonce's tables is not there: PostgreSQL's `undefined_table`, and
 * MySQL's missing table or missing database (the store's `schema` is a database there).
 */
const UNDEFINED_TABLE: ReadonlySet<unknown> = new Set([
  '42P01',
  'ER_NO_SUCH_TABLE',
  'ER_BAD_DB_ERROR',
]);

/**
 * Runs `call`, turning "relation does not exist" into a {@link ConfigurationError} that says
 * what to do (migrate, or check the schema and prefix), instead of the driver's error: an
 * operator pointing the CLI at the wrong schema is the usual cause. @internal
 */
export async function inMigratedSchema<T>(store: Store, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (!UNDEFINED_TABLE.has(code)) throw error;
    throw new ConfigurationError(
      `schema ${store.schema} has no justonce tables${store.tablePrefix === '' ? '' : ` with prefix ${store.tablePrefix}`}: run the migrations (store.migrate() or justonce migrate), or check the schema and prefix`,
      { schema: store.schema, tablePrefix: store.tablePrefix },
    );
  }
}
