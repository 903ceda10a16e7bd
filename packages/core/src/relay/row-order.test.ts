import { ascendingId, idAfter, idsAscending } from './row-order';
import type { ClaimedRow } from './sql/claim';

const row = (id: string, key: string | null): ClaimedRow => ({
  id,
  destination: 'd',
  partition_key: key,
  message_id: `m-${id}`,
  headers: {},
  payload: new Uint8Array(0),
  attempts: 0,
});

describe('row order', () => {
  it('compares decimal ids by value, not as text', () => {
    expect(idAfter('10', '9')).toBe(true);
    expect(idAfter('9', '10')).toBe(false);
    expect(idAfter('12', '12')).toBe(false);
    expect(
      [row('10', 'a'), row('9', 'a'), row('100', 'b')].sort(ascendingId).map((r) => r.id),
    ).toEqual(['9', '10', '100']);
  });

  it('tells rows in id order from rows out of it', () => {
    expect(idsAscending([])).toBe(true);
    expect(idsAscending([row('9', 'a'), row('10', 'b'), row('11', null)])).toBe(true);
    expect(idsAscending([row('10', 'a'), row('9', 'b')])).toBe(false);
    expect(idsAscending([row('9', 'a'), row('9', 'b')])).toBe(false);
  });
});
