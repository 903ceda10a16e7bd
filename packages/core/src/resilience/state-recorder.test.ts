import { createManualClock } from '../retry/manual-clock';
import { stateRows } from './state-recorder';
import type { ResilienceSnapshot } from './types';

const window = {
  windowMs: 10_000,
  firstDeliveries: 40,
  retriesPaid: 3,
  retriesShed: 2,
  breakerSheds: 5,
};

describe('stateRows', () => {
  it('writes the breakers not closed first, then the latest changed, at most maxKeys', () => {
    const clock = createManualClock(100_000);
    const snapshot: ResilienceSnapshot = {
      name: 'billing',
      breakers: [
        { key: 'old', state: 'closed', since: 1_000 },
        { key: 'recent', state: 'closed', since: 90_000 },
        { key: 'down', state: 'open', since: 50_000 },
        { key: 'probing', state: 'half-open', since: 99_000 },
      ],
      budgetRemaining: 7,
      shed: { breakerOpen: 9, budgetSpent: 4 },
      window,
    };
    const rows = stateRows(snapshot, clock, 3);
    expect(rows.map((r) => [r.key, r.state])).toEqual([
      ['probing', 'half-open'],
      ['down', 'open'],
      ['recent', 'closed'],
    ]);
    // On the wall clock by its age: opened 50 s before the clock's now.
    const opened = rows[1]!.since!.getTime();
    expect(Math.abs(opened - (Date.now() - 50_000))).toBeLessThan(1_000);
    expect(rows[0]).toMatchObject({ budgetRemaining: 7, ...window });
  });

  it('one `*` row without a state for a consumer without a breaker', () => {
    const rows = stateRows(
      {
        name: 'billing',
        breakers: [],
        budgetRemaining: undefined,
        shed: { breakerOpen: 0, budgetSpent: 0 },
        window,
      },
      createManualClock(0),
      20,
    );
    expect(rows).toEqual([
      { key: '*', state: null, since: null, budgetRemaining: null, ...window },
    ]);
  });
});
