import { createStore, validateIdentifier, type Store } from '@justonce/core';
import { UsageError } from './usage-error';

/** The global options every command receives. */
export interface GlobalOptions {
  /** PostgreSQL connection string; defaults to `DATABASE_URL`. */
  readonly databaseUrl?: string;
  /** Schema holding justonce's tables. Default `justonce`. */
  readonly schema: string;
}

/**
 * Checks the global options without touching the database, so a bad command line changes
 * nothing; throws {@link UsageError}.
 */
export function checkGlobalOptions(options: GlobalOptions): { url: string; schema: string } {
  const url = options.databaseUrl ?? process.env['DATABASE_URL'];
  if (url === undefined || url === '') {
    throw new UsageError('no database: pass --database-url or set DATABASE_URL');
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new UsageError('--database-url must be a postgres:// or postgresql:// URL');
  }
  try {
    validateIdentifier(options.schema, 'schema');
  } catch {
    throw new UsageError(
      `--schema must match [a-z_][a-z0-9_]*, got ${JSON.stringify(options.schema)}`,
    );
  }
  return { url, schema: options.schema };
}

/** Opens the store for one command, runs `use`, and always closes it. */
export async function withStore<T>(
  options: GlobalOptions,
  use: (store: Store) => Promise<T>,
): Promise<T> {
  const { url, schema } = checkGlobalOptions(options);
  const store = await createStore({ connectionString: url, schema, pool: { min: 0, max: 2 } });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
