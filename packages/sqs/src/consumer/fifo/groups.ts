import type { HeldMessage } from '../visibility/held-message';

/**
 * The rounds of a receive batch: on a FIFO queue round k holds the k-th message of each
 * group; on a standard queue (`fifo` false) the whole batch is one round. @internal
 */
export function roundsOf(fifo: boolean, batch: readonly HeldMessage[]): HeldMessage[][] {
  if (!fifo) return [[...batch]];
  const rounds: HeldMessage[][] = [];
  const position = new Map<string, number>();
  for (const h of batch) {
    const group = groupOf(h);
    const k = position.get(group) ?? 0;
    position.set(group, k + 1);
    (rounds[k] ??= []).push(h);
  }
  return rounds;
}

/** The FIFO message group of `h` (`''` on a standard queue). @internal */
export function groupOf(h: HeldMessage): string {
  return h.message.Attributes?.MessageGroupId ?? '';
}
