import { createManualClock } from '../retry/manual-clock';
import type { Logger } from '../observability/logger';
import { WHOLE_CONSUMER_KEY } from './gate';
import { IntakeDriver } from './intake';
import type { ResilienceEvent } from './types';

function recorder(): { logger: Logger; lines: string[]; calls: string[] } {
  const lines: string[] = [];
  const calls: string[] = [];
  const at = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
  return {
    lines,
    calls,
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
  };
}

const breaker = (key: string, from: string, to: string): ResilienceEvent =>
  ({ type: 'breaker', name: 'orders', key, from, to, at: 0 }) as ResilienceEvent;

describe('IntakeDriver', () => {
  it('pauses the intake while the whole-consumer breaker is open and resumes it for the probe', async () => {
    const clock = createManualClock();
    const driver = new IntakeDriver('orders', 1_000, clock);
    const { logger, lines, calls } = recorder();
    const detach = driver.attach({
      logger,
      intake: { pause: (ms) => calls.push(`pause ${ms}`), resume: () => calls.push('resume') },
    });
    driver.onEvent(breaker(WHOLE_CONSUMER_KEY, 'closed', 'open'));
    expect(calls).toEqual(['pause 1000']);
    expect(lines).toEqual([
      expect.stringMatching(/^warn circuit open for consumer orders \(key \*\) until /),
    ]);
    await clock.advance(999);
    expect(calls).toEqual(['pause 1000']);
    await clock.advance(1);
    expect(calls).toEqual(['pause 1000', 'resume']);
    // The probe failed: open again, paused again; then it closes.
    driver.onEvent(breaker(WHOLE_CONSUMER_KEY, 'half-open', 'open'));
    driver.onEvent(breaker(WHOLE_CONSUMER_KEY, 'open', 'half-open'));
    driver.onEvent(breaker(WHOLE_CONSUMER_KEY, 'half-open', 'closed'));
    expect(calls).toEqual(['pause 1000', 'resume', 'pause 1000', 'resume']);
    expect(lines.at(-1)).toBe('info circuit closed for consumer orders (key *)');
    // The wait of the second open ended with the close: no late resume.
    await clock.advance(2_000);
    expect(calls).toHaveLength(4);
    detach();
  });

  it('logs a per-key breaker but leaves the intake alone', async () => {
    const clock = createManualClock();
    const driver = new IntakeDriver('orders', 1_000, clock);
    const { logger, lines, calls } = recorder();
    driver.attach({
      logger,
      intake: { pause: () => calls.push('pause'), resume: () => calls.push('resume') },
    });
    driver.onEvent(breaker('tenant-a', 'closed', 'open'));
    await clock.advance(1_000);
    expect(calls).toEqual([]);
    expect(lines).toEqual([
      expect.stringMatching(/^warn circuit open for consumer orders \(key tenant-a\)/),
    ]);
  });
});
