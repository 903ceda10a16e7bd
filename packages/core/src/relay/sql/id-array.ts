/**
 * Outbox row ids as one PostgreSQL array literal (`{1,2,3}`), to bind as text and cast with
 * `?::bigint[]`. Given a JavaScript array, the driver quotes and escapes every element anew
 * on each statement, garbage the relay makes per event (`pnpm bench sqs`, case `relay`); the
 * ids are the decimal text PostgreSQL gave (`id::text`) and need neither.
 * @internal
 */
export function idArray(ids: Iterable<string>): string {
  return `{${Array.isArray(ids) ? ids.join(',') : [...ids].join(',')}}`;
}
