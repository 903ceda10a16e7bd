/**
 * How each service runs as a process: start, then say `READY <name>` on stdout (the
 * orchestrator waits for that line), stop gracefully on SIGTERM or SIGINT. A SIGKILL, which
 * the orchestrator sends on purpose, skips all of it: that is the point.
 */

/** The line a service prints once it serves; the orchestrator waits for it. */
export const READY_PREFIX = 'READY ';

/**
 * Runs `start` (which returns the service's stop function), reports readiness, and stops on
 * SIGTERM/SIGINT. Exits 1 when starting or stopping fails.
 */
export function serviceMain(name: string, start: () => Promise<() => Promise<void>>): void {
  const fail = (error: unknown): void => {
    console.error(`${name}:`, error);
    process.exit(1);
  };
  start().then((stop) => {
    console.log(`${READY_PREFIX}${name} pid=${process.pid}`);
    let stopping = false;
    const shutdown = (): void => {
      if (stopping) return;
      stopping = true;
      stop().then(() => process.exit(0), fail);
    };
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
  }, fail);
}
