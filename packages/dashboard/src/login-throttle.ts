/** Wrong tokens in a row from one client that are answered at once. */
const FREE_FAILURES = 5;
/** The first lockout; each further wrong token doubles it, up to {@link MAX_LOCK_MS}. */
const FIRST_LOCK_MS = 1_000;
const MAX_LOCK_MS = 60_000;
/** Wrong tokens from all clients together within {@link CEILING_WINDOW_MS} that lock everyone. */
const CEILING = 100;
const CEILING_WINDOW_MS = 60_000;
/** Clients whose counts are kept; beyond it the least recently failed one is forgotten. */
const MAX_CLIENTS = 10_000;

interface Count {
  failures: number;
  lockedUntil: number;
}

/**
 * Slows the guessing of the operator token, per client and in all. A client is a credential's
 * channel (the login form or a Bearer header) and, when the server knows it, the client's
 * address: a stale script sending a wrong Bearer token locks out itself, never a person at
 * the login form. After {@link FREE_FAILURES} wrong tokens in a row from one client, no token
 * of that client is checked for a lockout of 1 s, doubled by each further wrong token up to a
 * minute; a right token ends its count.
 *
 * The ceiling bounds guessing from many clients at once (many addresses, or clients a proxy
 * makes look alike): {@link CEILING} wrong tokens within a minute, from all clients together,
 * lock every client until the oldest of them is a minute old. One client alone never gets
 * there: it is locked after five, and then adds one wrong token per lockout at most.
 */
export class LoginThrottle {
  /** Per client, least recently failed first. */
  private readonly counts = new Map<string, Count>();
  /** When the last {@link CEILING} wrong tokens came, oldest first. */
  private readonly recent: number[] = [];

  constructor(private readonly now: () => number = Date.now) {}

  /** How long until a token of `client` is checked again, in ms; 0 when it is checked now. */
  waitMs(client: string): number {
    const now = this.now();
    const own = this.counts.get(client)?.lockedUntil ?? 0;
    const all = this.recent.length < CEILING ? 0 : this.recent[0]! + CEILING_WINDOW_MS;
    return Math.max(0, own - now, all - now);
  }

  /** Notes a wrong token of `client`. */
  failed(client: string): void {
    const now = this.now();
    this.recent.push(now);
    if (this.recent.length > CEILING) this.recent.shift();
    const count = this.counts.get(client) ?? { failures: 0, lockedUntil: 0 };
    this.counts.delete(client); // set again below: the least recently failed stay first
    this.counts.set(client, count);
    if (this.counts.size > MAX_CLIENTS) this.counts.delete(this.counts.keys().next().value!);
    count.failures += 1;
    const over = count.failures - FREE_FAILURES;
    if (over < 0) return;
    count.lockedUntil = now + Math.min(MAX_LOCK_MS, FIRST_LOCK_MS * 2 ** Math.min(over, 16));
  }

  /** Notes a right token of `client`: its count starts again. */
  succeeded(client: string): void {
    this.counts.delete(client);
  }
}
