/**
 * The rows of docs/load-shedding.md's HTTP table: a route's `resilience` option answers 503
 * with `Retry-After` while its breaker is open (the handler does not run) and resumes after
 * the probe, and answers 429 with `Retry-After` when a failure finds the retry budget spent.
 */
import { freshKey, postOrder, sf } from '../support/client';
import { expectProblem } from '../support/expect-problem';
import type { Row } from '../support/harness';
import { sleep } from '../support/orders';

const OPEN_MS = 300;

export const RESILIENCE_ROWS: readonly Row[] = [
  {
    case: 'an open breaker answers 503 with Retry-After without running the handler; the probe closes it',
    route: {
      resilience: { budget: false, breaker: { trip: { consecutiveFailures: 2 }, openMs: OPEN_MS } },
    },
    async run(app, env) {
      const failing = { item: freshKey('down'), behaviour: 'throw' };
      for (let i = 0; i < 2; i++) {
        const failed = await postOrder(app.url, { key: sf(freshKey('fail')), body: failing });
        expect(failed.status).toBe(500);
      }
      const item = freshKey('shed-item');
      const shed = await postOrder(app.url, {
        key: sf(freshKey('shed')),
        body: { item, behaviour: 'create' },
      });
      expectProblem(shed, 503, 'circuitOpen');
      expect(shed.headers.get('retry-after')).toBe('1');
      expect(env.itemRuns.get(item)).toBeUndefined();
      await sleep(OPEN_MS + 50);
      const probe = await postOrder(app.url, {
        key: sf(freshKey('probe')),
        body: { item, behaviour: 'create' },
      });
      expect(probe.status).toBe(201);
      const after = await postOrder(app.url, {
        key: sf(freshKey('after')),
        body: { item: freshKey('after-item'), behaviour: 'create' },
      });
      expect(after.status).toBe(201);
    },
  },
  {
    case: 'a failure the retry budget cannot pay answers 429 with Retry-After instead of its error',
    route: {
      resilience: {
        breaker: false,
        // One retry per 10 s window, whatever the traffic.
        budget: { ratio: 0, minRetriesPerSecond: 0.1, windowMs: 10_000, spentDelayMs: 5_000 },
      },
    },
    async run(app) {
      const body = { item: freshKey('budget'), behaviour: 'throw' };
      const paid = await postOrder(app.url, { key: sf(freshKey('paid')), body });
      expect(paid.status).toBe(500);
      const spent = await postOrder(app.url, { key: sf(freshKey('spent')), body });
      expectProblem(spent, 429, 'retryBudgetSpent');
      expect(spent.headers.get('retry-after')).toBe('5');
      // A request that succeeds is never refused by the budget.
      const ok = await postOrder(app.url, {
        key: sf(freshKey('ok')),
        body: { item: freshKey('ok-item'), behaviour: 'create' },
      });
      expect(ok.status).toBe(201);
    },
  },
];
