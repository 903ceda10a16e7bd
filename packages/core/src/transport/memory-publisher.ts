import { durationOption, optionKeys, rejectUnknownOptions } from '../config/options';
import type { OutgoingMessage, Publisher, PublishResult } from './publisher';

/**
 * Decides whether publishing one message fails: return an `Error` (retriable) or
 * `{ error, retriable }` to fail it, `undefined` to let it through.
 */
export type FailureRule = (
  message: OutgoingMessage,
) => Error | { readonly error: Error; readonly retriable: boolean } | undefined;

/** Options of {@link createMemoryPublisher}. */
export interface MemoryPublisherOptions {
  /** Delay of every `publish` call in milliseconds, to stand in for a broker round trip. Default 0. */
  readonly delayMs?: number;
}

/** A message the in-memory publisher accepted, with when and in which call. */
export interface PublishedMessage extends OutgoingMessage {
  /** `Date.now()` when it was accepted. */
  readonly publishedAt: number;
  /** 1-based number of the `publish` call that carried it. */
  readonly call: number;
}

/**
 * A {@link Publisher} that keeps messages in memory, with failure injection: for tests,
 * examples and benchmarks. Failures are decided per message, and a message of a key that
 * failed earlier in the same call is failed too, as a broker keeping per-key order would.
 */
export interface MemoryPublisher extends Publisher {
  /** Every accepted message, in acceptance order (re-publishes included). */
  readonly published: readonly PublishedMessage[];
  /** Number of `publish` calls so far. */
  readonly calls: number;
  /** Adds a failure rule; returns a function that removes it. */
  failWhen(rule: FailureRule): () => void;
  /** Fails every message of `key` until the returned function (or {@link heal}) is called. */
  failKey(key: string, options?: { retriable?: boolean; message?: string }): () => void;
  /** Makes the next `count` `publish` calls reject as a whole (a broker that is down). */
  rejectNextCalls(count: number, error?: Error): void;
  /** Removes every failure rule and pending rejection. */
  heal(): void;
  /** Accepted messages of one key, in order. */
  byKey(key: string | null): PublishedMessage[];
  /** Calls `listener` after each accepted message; returns a function that unsubscribes. */
  onPublish(listener: (message: PublishedMessage) => void): () => void;
  /**
   * Resolves once at least `count` messages were accepted in total; rejects after
   * `timeoutMs` (default 10 000) with what was seen.
   */
  waitForCount(count: number, timeoutMs?: number): Promise<void>;
  /** Forgets what was published (failure rules stay). */
  clear(): void;
  /** True after {@link Publisher.close}. */
  readonly closed: boolean;
}

const KEYS = optionKeys<MemoryPublisherOptions>()(['delayMs']);

/** Creates an in-memory publisher. */
export function createMemoryPublisher(options: MemoryPublisherOptions = {}): MemoryPublisher {
  rejectUnknownOptions(options, KEYS, 'createMemoryPublisher');
  // A ConfigurationError, as the README promises for every factory's options.
  const delayMs = durationOption(options.delayMs, 'delayMs', 0, 0);
  const published: PublishedMessage[] = [];
  const rules = new Set<FailureRule>();
  const listeners = new Set<(message: PublishedMessage) => void>();
  let rejections: Error[] = [];
  let calls = 0;
  let closed = false;

  const decide = (message: OutgoingMessage): PublishResult => {
    for (const rule of rules) {
      const outcome = rule(message);
      if (outcome === undefined) continue;
      return outcome instanceof Error
        ? { messageId: message.messageId, ok: false, error: outcome, retriable: true }
        : { messageId: message.messageId, ok: false, ...outcome };
    }
    return { messageId: message.messageId, ok: true };
  };

  const publisher: MemoryPublisher = {
    messagingSystem: 'justonce_memory',
    get published() {
      return published;
    },
    get calls() {
      return calls;
    },
    get closed() {
      return closed;
    },
    async publish(messages: readonly OutgoingMessage[]): Promise<PublishResult[]> {
      if (closed) throw new Error('memory publisher is closed');
      calls += 1;
      const call = calls;
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const rejection = rejections.shift();
      if (rejection) throw rejection;
      const failedKeys = new Set<string>();
      const now = Date.now();
      return messages.map((message) => {
        if (message.key !== null && failedKeys.has(message.key)) {
          return {
            messageId: message.messageId,
            ok: false,
            error: new Error(`an earlier message of key ${message.key} failed in this call`),
            retriable: true,
          };
        }
        const result = decide(message);
        if (!result.ok) {
          if (message.key !== null) failedKeys.add(message.key);
          return result;
        }
        const accepted: PublishedMessage = { ...message, publishedAt: now, call };
        published.push(accepted);
        for (const listener of listeners) listener(accepted);
        return result;
      });
    },
    async close(): Promise<void> {
      closed = true;
    },
    failWhen(rule) {
      rules.add(rule);
      return () => {
        rules.delete(rule);
      };
    },
    failKey(key, failOptions = {}) {
      const error = new Error(failOptions.message ?? `injected failure for key ${key}`);
      const retriable = failOptions.retriable ?? true;
      return publisher.failWhen((message) =>
        message.key === key ? { error, retriable } : undefined,
      );
    },
    rejectNextCalls(count, error = new Error('injected: broker unavailable')) {
      rejections = Array.from({ length: count }, () => error);
    },
    heal() {
      rules.clear();
      rejections = [];
    },
    byKey(key) {
      return published.filter((m) => m.key === key);
    },
    onPublish(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    waitForCount(count, timeoutMs = 10_000) {
      if (published.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          unsubscribe();
          reject(
            new Error(`waited ${timeoutMs} ms for ${count} messages, saw ${published.length}`),
          );
        }, timeoutMs);
        const unsubscribe = publisher.onPublish(() => {
          if (published.length < count) return;
          clearTimeout(timer);
          unsubscribe();
          resolve();
        });
      });
    },
    clear() {
      published.length = 0;
    },
  };
  return publisher;
}
