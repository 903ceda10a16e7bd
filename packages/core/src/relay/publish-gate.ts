/**
 * Limits how many `publish` calls a relay has in flight. Cycles beyond the limit claim and
 * mark while others publish, so the database work overlaps the broker's round trips without
 * the broker seeing more parallel calls. @internal
 */
export interface PublishGate {
  /** Waits for a slot; the returned function gives it back (call it exactly once). */
  acquire(): Promise<() => void>;
}

/** A first-come, first-served gate of `slots` slots. @internal */
export function createPublishGate(slots: number): PublishGate {
  let free = slots;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else free += 1;
  };
  return {
    acquire: () => {
      if (free > 0) {
        free -= 1;
        return Promise.resolve(once(release));
      }
      return new Promise((resolve) => waiting.push(() => resolve(once(release))));
    },
  };
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
