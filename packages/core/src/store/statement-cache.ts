import type { MigrationNames } from './migration';

/**
 * Builds each variant of a statement once per store's table names and keeps it as long as
 * those names live: the hot statements are long and run many times a second, and the same
 * text object each time keeps the lookups of its `$n` form and its prepared name cheap
 * (the string's hash is computed once). @internal
 */
export function statementCache<V>(
  build: (names: MigrationNames, variant: V) => string,
): (names: MigrationNames, variant: V) => string {
  const byNames = new WeakMap<MigrationNames, Map<V, string>>();
  return (names, variant) => {
    let built = byNames.get(names);
    if (built === undefined) {
      built = new Map();
      byNames.set(names, built);
    }
    let sql = built.get(variant);
    if (sql === undefined) {
      sql = build(names, variant);
      built.set(variant, sql);
    }
    return sql;
  };
}
