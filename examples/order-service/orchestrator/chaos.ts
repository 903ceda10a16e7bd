/**
 * The SIGKILLs: each service killed `killsPerService` times while orders flow, at points
 * spread over the run (by its progress, so that they land while every service has work),
 * and started again after a short pause. A kill does not wait for the previous one's restart
 * (only for its own service's), so that even a short run gets all of them while it works.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SERVICES, type ServiceName } from '../config';
import type { ServiceProcesses } from './processes';

/** One planned kill: which service, at which progress (0-1). */
export interface PlannedKill {
  readonly service: ServiceName;
  readonly at: number;
  /** How long the service stays down, in milliseconds. */
  readonly pauseMs: number;
}

/**
 * Kills spread evenly over 5%-75% of the run, the services (default all four) in turn,
 * pauses of 0.2-1 s.
 */
export function planKills(
  killsPerService: number,
  random: () => number,
  services: readonly ServiceName[] = SERVICES,
): PlannedKill[] {
  const total = killsPerService * services.length;
  return Array.from({ length: total }, (_, i) => ({
    service: services[i % services.length] ?? 'orders',
    at: 0.05 + (0.7 * (i + 0.5)) / total,
    pauseMs: 200 + Math.floor(random() * 800),
  }));
}

/** Kills that were carried out, per service. */
export type KillCounts = Record<ServiceName, number>;

/**
 * Carries out `plan`: waits until `progress()` reaches each kill's point, kills the service,
 * and starts it again after its pause. Resolves once every restart is ready. Stops planning
 * kills when `stopped()` (the run gave up).
 */
export async function runChaos(
  plan: readonly PlannedKill[],
  processes: ServiceProcesses,
  progress: () => number,
  stopped: () => boolean,
  onRestarted?: (kill: PlannedKill, readyMs: number) => void,
): Promise<KillCounts> {
  const done: KillCounts = { orders: 0, payments: 0, shipping: 0, provider: 0 };
  const restarting = new Map<ServiceName, Promise<void>>();
  let failed: { error: unknown } | undefined;
  for (const kill of plan) {
    while (progress() < kill.at && !stopped()) await sleep(25);
    if (stopped()) break;
    await restarting.get(kill.service);
    await processes.kill(kill.service);
    done[kill.service] += 1;
    restarting.set(
      kill.service,
      (async () => {
        await sleep(kill.pauseMs);
        const starting = Date.now();
        await processes.start(kill.service);
        onRestarted?.(kill, Date.now() - starting);
      })().catch((error: unknown) => {
        failed ??= { error };
      }),
    );
  }
  await Promise.all(restarting.values());
  if (failed !== undefined) throw failed.error;
  return done;
}
