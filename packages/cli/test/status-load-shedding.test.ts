/**
 * `justonce status` with a consumer whose breaker is open (a real memory-broker consumer on
 * the schema, `resilience` set): the "Load shedding" section and its `--json` field. (A store
 * where no consumer reported has no section: status.test.ts.)
 */
import { openBreaker, type OpenBreaker } from '../../../test-support/open-breaker';
import { useSchema } from './cli-process';

let shedding: OpenBreaker | undefined;
const db = useSchema('cli_shed', async (store) => {
  shedding = await openBreaker(store, 'payments');
});

afterAll(async () => {
  await shedding?.stop();
});

describe('status with load shedding', () => {
  it('prints a line per breaker: state, for how long, budget spent and left, sheds', async () => {
    const run = await db.inSchema('status');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /Load shedding \(breakers; budget and sheds over the budget window\)/,
    );
    expect(run.stdout).toMatch(
      /consumer\s*│\s*breaker key\s*│\s*state\s*│\s*for\s*│\s*retry budget\s*│\s*shed/,
    );
    expect(run.stdout).toMatch(
      /payments\s*│\s*\*\s*│\s*open\s*│\s*\d+ s\s*│\s*\d+ spent, \d+ left \(10 s window\)\s*│\s*\d+ \(breaker \d+, budget 0\)/,
    );
  });

  it('--json carries the same figures', async () => {
    const run = await db.inSchema('status', '--json');
    expect(run.code).toBe(0);
    const { resilience } = JSON.parse(run.stdout);
    expect(resilience).toEqual([
      {
        consumer: 'payments',
        reportedAt: expect.any(String),
        stale: false,
        budgetRemaining: expect.any(Number),
        window: {
          windowMs: 10_000,
          firstDeliveries: expect.any(Number),
          retriesPaid: expect.any(Number),
          retriesShed: 0,
          breakerSheds: expect.any(Number),
        },
        breakers: [{ key: '*', state: 'open', since: expect.any(String) }],
      },
    ]);
  });
});
