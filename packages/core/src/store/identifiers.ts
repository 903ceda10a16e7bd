import { ConfigurationError } from '../errors';

/**
 * Identifiers we accept for schema names and table prefixes: lower-case letters, digits
 * and underscores, starting with a letter or underscore. Anything else is refused, so a
 * validated name can be double-quoted into SQL without escaping surprises.
 */
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** PostgreSQL truncates identifiers longer than 63 bytes; refuse instead of truncating. */
const MAX_IDENTIFIER_LENGTH = 63;

/** Validates a schema name, table prefix or table name and returns it unchanged. */
export function validateIdentifier(value: unknown, what: string, allowEmpty = false): string {
  if (typeof value !== 'string') {
    throw new ConfigurationError(`${what} must be a string`, { [what]: typeof value });
  }
  if (value === '' && allowEmpty) return value;
  if (!IDENTIFIER.test(value) || value.length > MAX_IDENTIFIER_LENGTH) {
    throw new ConfigurationError(
      `${what} "${value}" is not a valid identifier: use 1-63 characters of a-z, 0-9 and _, not starting with a digit`,
      { [what]: value },
    );
  }
  return value;
}

/**
 * Quotes an identifier that has already passed {@link validateIdentifier}: double quotes,
 * or MySQL's backticks.
 */
export function quoteIdentifier(validated: string, mysql = false): string {
  return mysql ? `\`${validated}\`` : `"${validated}"`;
}
