/**
 * Runs the messages of each FIFO message group one after another, in the order they were
 * received. When a message of a group is not done (its retry is scheduled, or it was
 * released), the later messages of the group received so far are told so, so they are
 * released instead of handled: they come back behind it. A group's lane is forgotten once
 * empty.
 *
 * "Received so far" is what makes the redelivery of the held-back message itself run: SQS
 * hands a group out again only after every message of it in flight was released, so a
 * message of the group received after the hold-back starts the group afresh, in order. It may
 * even arrive before the lane has emptied (the receive's answer can come before the last
 * release's), and must not be released again then, or the group could go round in circles.
 * @internal
 */
export class GroupLanes {
  private readonly tails = new Map<string, Promise<void>>();
  /** Per group, the receive order (`seq`) of the latest message queued. */
  private readonly latest = new Map<string, number>();
  /** Per group, the latest `seq` that was behind a held-back message when it was held back. */
  private readonly heldBackUpTo = new Map<string, number>();

  /**
   * Queues `task` behind the earlier tasks of `group`; `seq` is the message's place in the
   * order of receipt, so it increases from call to call. `task` gets whether its message was
   * already received when an earlier message of the group was held back, and resolves
   * whether it held its own message back.
   */
  enqueue(
    group: string,
    seq: number,
    task: (behindHeldBack: boolean) => Promise<boolean>,
  ): Promise<void> {
    const previous = this.tails.get(group) ?? Promise.resolve();
    this.latest.set(group, seq);
    const next = previous.then(async () => {
      const behind = seq <= (this.heldBackUpTo.get(group) ?? Number.NEGATIVE_INFINITY);
      const heldBack = await task(behind).catch(() => true);
      // A message released because it was behind moves nothing: the boundary covers it.
      if (heldBack && !behind) this.heldBackUpTo.set(group, this.latest.get(group)!);
    });
    this.tails.set(group, next);
    void next.then(() => {
      if (this.tails.get(group) !== next) return;
      this.tails.delete(group);
      this.latest.delete(group);
      this.heldBackUpTo.delete(group);
    });
    return next;
  }
}
