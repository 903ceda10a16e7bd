import type { MigrationNames } from '../../store/migration';

/**
 * Builds each variant of a statement once per store's table names and keeps it as long as
 * those names live: the relay's statements are long, and a cycle runs them many times a
 * second. @internal
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
