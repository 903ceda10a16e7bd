import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A network partition played by the kernel's firewall: every TCP packet to or from one
 * local port is dropped (no reset, no error), both ways, for connections old and new. That is
 * what a vanished host or a cut link looks like to both ends, down to TCP keepalive probes
 * going unanswered. Each rule carries the comment {@link RULE_COMMENT} and the pid of the
 * process that cut it, so rules of a run that died are cleaned up by
 * {@link removeStrayPartitions} and those of a live run are left alone. Needs `iptables`
 * (Debian's package; `.ci/run` installs it) and the right to change the firewall (root).
 */
export interface Partition {
  /** The port whose packets are dropped while the partition is up. */
  readonly port: number;
  /** Starts dropping packets. */
  cut(): Promise<void>;
  /** Stops dropping packets; TCP's retransmissions then deliver what was held. */
  heal(): Promise<void>;
  /** Whether packets are being dropped now. */
  readonly isCut: boolean;
}

export const RULE_COMMENT = 'justonce-test-partition';

/** This process's rules carry its pid, so a cleanup never removes a live run's rules. */
const OWN_COMMENT = `${RULE_COMMENT}-${process.pid}`;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const CANDIDATES = ['/usr/sbin/iptables', '/sbin/iptables', '/usr/bin/iptables'];

function iptablesPath(): string | undefined {
  return CANDIDATES.find((candidate) => existsSync(candidate));
}

/**
 * Why partitions cannot be played on this machine, or `undefined` when they can. Tests fail
 * with this reason rather than skip: CI installs iptables and runs as root.
 */
export async function partitionUnavailable(): Promise<string | undefined> {
  const iptables = iptablesPath();
  if (iptables === undefined) return 'iptables is not installed (apt-get install iptables)';
  try {
    await run(iptables, ['-w', '-S', 'INPUT']);
    return undefined;
  } catch (error) {
    return `iptables cannot read the firewall: ${(error as Error).message}`;
  }
}

function rules(port: number): string[][] {
  const common = ['-i', 'lo', '-p', 'tcp', '-m', 'comment', '--comment', OWN_COMMENT];
  // Packets on loopback pass INPUT once each: dropping both ports' packets there cuts both ways.
  return [
    ['INPUT', ...common, '--dport', String(port), '-j', 'DROP'],
    ['INPUT', ...common, '--sport', String(port), '-j', 'DROP'],
  ];
}

async function iptables(args: string[]): Promise<void> {
  const binary = iptablesPath();
  if (binary === undefined) throw new Error('iptables is not installed');
  await run(binary, ['-w', ...args]);
}

const active = new Set<Partition>();

/** A partition of `port`, not yet cut. Heal (or {@link healAll}) in `afterAll`. */
export function partitionOf(port: number): Partition {
  let cut = false;
  const partition: Partition = {
    port,
    get isCut() {
      return cut;
    },
    async cut() {
      if (cut) return;
      for (const rule of rules(port)) await iptables(['-I', ...rule]);
      cut = true;
      active.add(partition);
    },
    async heal() {
      if (!cut) return;
      for (const rule of rules(port)) await iptables(['-D', ...rule]).catch(() => undefined);
      cut = false;
      active.delete(partition);
    },
  };
  return partition;
}

/** Heals every partition this process cut. */
export async function healAll(): Promise<void> {
  await Promise.all([...active].map((partition) => partition.heal()));
}

/** Removes every partition rule left behind by a process that is gone (a killed run). */
export async function removeStrayPartitions(): Promise<void> {
  const binary = iptablesPath();
  if (binary === undefined) return;
  const listed = await run(binary, ['-w', '-S', 'INPUT']).catch(() => undefined);
  if (listed === undefined) return;
  for (const line of listed.stdout.split('\n')) {
    const owner = line.match(new RegExp(`${RULE_COMMENT}-(\\d+)`));
    if (!line.startsWith('-A INPUT') || owner === null) continue;
    if (isAlive(Number(owner[1]))) continue;
    const spec = line.replace(/^-A INPUT /, '').match(/"[^"]*"|\S+/g) ?? [];
    await iptables(['-D', 'INPUT', ...spec.map((part) => part.replace(/^"|"$/g, ''))]).catch(
      () => undefined,
    );
  }
}
