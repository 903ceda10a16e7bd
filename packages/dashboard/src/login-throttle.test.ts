import { LoginThrottle } from './login-throttle';

describe('LoginThrottle', () => {
  let now = 0;
  const throttle = (): LoginThrottle => new LoginThrottle(() => now);

  beforeEach(() => {
    now = 1_000_000;
  });

  it('locks a client after five wrong tokens in a row, and only that client', () => {
    const t = throttle();
    for (let i = 0; i < 4; i++) t.failed('bearer 10.0.0.2');
    expect(t.waitMs('bearer 10.0.0.2')).toBe(0);
    t.failed('bearer 10.0.0.2');
    expect(t.waitMs('bearer 10.0.0.2')).toBe(1_000);
    expect(t.waitMs('form 10.0.0.2')).toBe(0);
    expect(t.waitMs('bearer 10.0.0.1')).toBe(0);
    t.succeeded('bearer 10.0.0.2');
    expect(t.waitMs('bearer 10.0.0.2')).toBe(0);
  });

  it('locks every client once a hundred wrong tokens came within a minute from all together', () => {
    const t = throttle();
    // Guessing spread over 25 addresses, four wrong tokens each: none of them is locked alone.
    for (let i = 0; i < 99; i++) t.failed(`form 10.0.${Math.floor(i / 4)}.1`);
    expect(t.waitMs('form 192.168.1.1')).toBe(0);
    now += 30_000;
    t.failed('form 10.0.99.1');
    // The hundredth: the oldest of them is 30 s old, so 30 s until it is a minute old.
    expect(t.waitMs('form 192.168.1.1')).toBe(30_000);
    expect(t.waitMs('bearer 192.168.1.1')).toBe(30_000);
    now += 30_000;
    expect(t.waitMs('form 192.168.1.1')).toBe(0);
  });

  it('never reaches the ceiling through one client alone: a locked client adds no wrong tokens', () => {
    const t = throttle();
    // A stale script retrying every second for an hour; while locked it is not even checked.
    for (let s = 0; s < 3_600; s++, now += 1_000) {
      if (t.waitMs('bearer 10.0.0.2') === 0) t.failed('bearer 10.0.0.2');
    }
    expect(t.waitMs('form 10.0.0.1')).toBe(0);
  });
});
