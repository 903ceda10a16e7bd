/**
 * Runs the messages of each FIFO message group one after another, in the order they were
 * received. When a message of a group is not done (its retry is scheduled, or it was
 * released), the group's later messages still waiting are told so, so they are released
 * instead of handled: they come back behind it. A group's lane is forgotten once empty.
 * @internal
 */
export class GroupLanes {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly blocked = new Set<string>();

  /**
   * Queues `task` behind the earlier tasks of `group`. `task` gets whether an earlier
   * message of the group was held back and resolves whether it held its own message back.
   */
  enqueue(group: string, task: (behindHeldBack: boolean) => Promise<boolean>): Promise<void> {
    const previous = this.tails.get(group) ?? Promise.resolve();
    const next = previous.then(async () => {
      const heldBack = await task(this.blocked.has(group)).catch(() => true);
      if (heldBack) this.blocked.add(group);
    });
    this.tails.set(group, next);
    void next.then(() => {
      if (this.tails.get(group) !== next) return;
      this.tails.delete(group);
      this.blocked.delete(group);
    });
    return next;
  }
}
