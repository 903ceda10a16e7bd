import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Resolves true when a TCP connection to `host:port` opens within `timeoutMs`. */
export function portAnswers(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.removeAllListeners();
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Options of {@link pollUntil}. */
export interface PollOptions {
  /** Give up after this long. */
  timeoutMs: number;
  /** Pause between attempts. */
  intervalMs?: number;
  /** Stop early, with this error, when it returns one (e.g. the process we wait for died). */
  abort?: () => Error | undefined;
}

/**
 * Calls `attempt` until it returns true, at most until the deadline. Resolves true on
 * success and false on timeout; throws what `abort` returns.
 */
export async function pollUntil(
  attempt: () => Promise<boolean>,
  { timeoutMs, intervalMs = 250, abort }: PollOptions,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stop = abort?.();
    if (stop) throw stop;
    if (await attempt()) return true;
    if (Date.now() + intervalMs > deadline) return false;
    await sleep(intervalMs);
  }
}
