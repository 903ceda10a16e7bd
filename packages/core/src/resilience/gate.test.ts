import { createManualClock } from '../retry/manual-clock';
import { createResilienceGate, WHOLE_CONSUMER_KEY, type Admitted } from './gate';
import { resolveResilience } from './options';
import type { ResilienceEvent, ResilienceOptions } from './types';

type Msg = { tenant: string };

function gateOf(options: ResilienceOptions<Msg>) {
  const clock = createManualClock(0);
  const events: ResilienceEvent[] = [];
  const gate = createResilienceGate<Msg>(
    'orders',
    resolveResilience({ clock, onEvent: (e) => events.push(e), ...options }, 'test'),
  );
  return { gate, clock, events };
}

function admit(gate: ReturnType<typeof gateOf>['gate'], key = WHOLE_CONSUMER_KEY): Admitted {
  const answer = gate.admit(key);
  if (!answer.admitted) throw new Error(`refused ${key}`);
  return answer;
}

describe('resilience gate', () => {
  it('opens after the trip, sheds while open, lets one probe through, and closes on its success', async () => {
    const { gate, clock, events } = gateOf({
      breaker: { trip: { consecutiveFailures: 3 }, openMs: 1_000 },
    });
    expect(gate.report(admit(gate), 'failure')).toBe(0);
    expect(gate.report(admit(gate), 'failure')).toBe(0);
    expect(gate.report(admit(gate), 'failure')).toBe(1_000);
    expect(gate.admit(WHOLE_CONSUMER_KEY)).toEqual({
      admitted: false,
      key: WHOLE_CONSUMER_KEY,
      retryAfterMs: 1_000,
    });
    await clock.advance(1_000);
    const probe = admit(gate);
    expect(gate.admit(WHOLE_CONSUMER_KEY).admitted).toBe(false); // one probe at a time
    gate.report(probe, 'success');
    expect(gate.admit(WHOLE_CONSUMER_KEY).admitted).toBe(true);
    expect(
      events.filter((e) => e.type === 'breaker').map((e) => e.type === 'breaker' && e.to),
    ).toEqual(['open', 'half-open', 'closed']);
    expect(gate.snapshot().shed).toEqual({ breakerOpen: 2, budgetSpent: 0 });
    expect(gate.snapshot().window.breakerSheds).toBe(2);
  });

  it('a failed probe opens the breaker again for another interval (flapping)', async () => {
    const { gate, clock } = gateOf({ breaker: { trip: { consecutiveFailures: 1 }, openMs: 500 } });
    gate.report(admit(gate), 'failure');
    await clock.advance(500);
    expect(gate.report(admit(gate), 'failure')).toBe(500);
    await clock.advance(499);
    expect(gate.admit(WHOLE_CONSUMER_KEY).admitted).toBe(false);
    await clock.advance(1);
    gate.report(admit(gate), 'success');
    // Closed since the probe's success, now.
    expect(gate.snapshot().breakers).toEqual([
      { key: WHOLE_CONSUMER_KEY, state: 'closed', since: clock.now() },
    ]);
  });

  it('non-infrastructure outcomes never trip it; a neutral report frees the permit', async () => {
    const { gate } = gateOf({ breaker: { trip: { consecutiveFailures: 1 } } });
    for (let i = 0; i < 10; i++) gate.report(admit(gate), i % 2 === 0 ? 'success' : 'neutral');
    expect(gate.snapshot().breakers[0]?.state).toBe('closed');
  });

  it('per-key breakers: one tenant failing does not stop another', async () => {
    const { gate } = gateOf({
      breaker: { trip: { consecutiveFailures: 2 }, key: (m) => m.tenant },
    });
    const a = gate.keyOf({ tenant: 'a' });
    const b = gate.keyOf({ tenant: 'b' });
    gate.report(admit(gate, a), 'failure');
    gate.report(admit(gate, a), 'failure');
    expect(gate.admit(a).admitted).toBe(false);
    expect(gate.admit(b).admitted).toBe(true);
  });

  it('a key function that throws or answers nothing falls back to the whole-consumer breaker', async () => {
    const { gate } = gateOf({
      breaker: {
        key: (m) => {
          if (m.tenant === 'boom') throw new Error('unreadable');
          return m.tenant;
        },
      },
    });
    expect(gate.keyOf({ tenant: 'boom' })).toBe(WHOLE_CONSUMER_KEY);
    expect(gate.keyOf({ tenant: '' })).toBe(WHOLE_CONSUMER_KEY);
  });

  it('keeps at most maxKeys breakers, dropping closed ones before open ones', async () => {
    const { gate } = gateOf({
      breaker: { trip: { consecutiveFailures: 1 }, maxKeys: 2, key: (m) => m.tenant },
    });
    gate.report(admit(gate, 'open-one'), 'failure');
    admit(gate, 'x');
    admit(gate, 'y');
    expect(gate.snapshot().breakers.map((b) => b.key)).toEqual(['open-one', 'y']);
  });

  it('the budget pays retries up to ratio × first deliveries plus the floor, then sheds', async () => {
    const { gate, clock, events } = gateOf({
      breaker: false,
      budget: { ratio: 0.2, minRetriesPerSecond: 0, windowMs: 1_000, spentDelayMs: 5_000 },
    });
    for (let i = 0; i < 10; i++) gate.earn();
    expect(gate.spend('k')).toBe(true);
    expect(gate.spend('k')).toBe(true);
    expect(gate.spend('k')).toBe(false);
    expect(gate.snapshot().window).toEqual({
      windowMs: 1_000,
      firstDeliveries: 10,
      retriesPaid: 2,
      retriesShed: 1,
      breakerSheds: 0,
    });
    expect(events.at(-1)).toEqual({
      type: 'shed',
      name: 'orders',
      key: 'k',
      reason: 'budget-spent',
      retryAfterMs: 5_000,
    });
    await clock.advance(1_100); // the window slides past everything
    for (let i = 0; i < 5; i++) gate.earn();
    expect(gate.spend('k')).toBe(true);
    expect(gate.snapshot()).toMatchObject({
      budgetRemaining: 0,
      shed: { budgetSpent: 1 }, // since start; the window counts only what it still covers
      window: { firstDeliveries: 5, retriesPaid: 1, retriesShed: 0 },
    });
  });

  it('without a budget every retry is paid; without a breaker everything is admitted', async () => {
    const { gate } = gateOf({ budget: false, breaker: false });
    expect(gate.spentDelayMs).toBe(0);
    for (let i = 0; i < 100; i++) expect(gate.spend('k')).toBe(true);
    const admitted = admit(gate);
    expect(admitted.permit).toBeUndefined();
    expect(gate.report(admitted, 'failure')).toBe(0);
    expect(gate.snapshot()).toEqual({
      name: 'orders',
      breakers: [],
      budgetRemaining: undefined,
      shed: { breakerOpen: 0, budgetSpent: 0 },
      window: {
        windowMs: 10_000,
        firstDeliveries: 0,
        retriesPaid: 0,
        retriesShed: 0,
        breakerSheds: 0,
      },
    });
  });
});
