import { ConfigurationError } from '../errors/configuration-error';
import type { Store } from '../store/store';

/** PostgreSQL's `undefined_table`: the schema or one of justonce's tables is not there. */
const UNDEFINED_TABLE = '42P01';

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
    if (code !== UNDEFINED_TABLE) throw error;
    throw new ConfigurationError(
      `schema ${store.schema} has no justonce tables${store.tablePrefix === '' ? '' : ` with prefix ${store.tablePrefix}`}: run the migrations (store.migrate() or justonce migrate), or check the schema and prefix`,
      { schema: store.schema, tablePrefix: store.tablePrefix },
    );
  }
}
