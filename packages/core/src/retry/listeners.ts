/** Removes the listener it was returned for. Calling it twice is harmless. */
export type Dispose = () => void;

/** @internal A set of typed listeners. */
export interface ListenerSet<T> {
  add(listener: (event: T) => void): Dispose;
  emit(event: T): void;
}

/**
 * @internal Listeners run synchronously in the order they were added. A listener that throws
 * does not stop the others nor the retry loop: what it throws is dropped, so listeners that
 * can fail must catch for themselves.
 */
export function createListenerSet<T>(): ListenerSet<T> {
  const listeners = new Set<(event: T) => void>();
  return {
    add(listener) {
      // Wrap so the same function added twice gets two independent registrations.
      const entry = (event: T): void => listener(event);
      listeners.add(entry);
      return () => {
        listeners.delete(entry);
      };
    },
    emit(event) {
      for (const listener of [...listeners]) {
        try {
          listener(event);
        } catch {
          // Documented above: a listener's failure must not change the retry outcome.
        }
      }
    },
  };
}
