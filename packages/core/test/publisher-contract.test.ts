import type { OutgoingMessage, Publisher, PublishResult } from '../src';
import { createMemoryPublisher, type MemoryPublisher } from '../src/transport/memory-publisher';
import {
  CONTRACT_CLAUSES,
  checkPublisherContract,
  type ContractCheck,
  type ContractDelivery,
  type PublisherContractOptions,
} from '../src/testing';

const DESTINATION = 'contract-topic';
const REFUSED = 'no such destination!';

/** Reads back what the memory publisher accepted for `destination`, as a consumer would. */
function receiveFrom(memory: MemoryPublisher) {
  return async (destination: string, count: number): Promise<ContractDelivery[]> =>
    memory.published
      .filter((m) => m.destination === destination)
      .slice(0, count)
      .map((m) => ({
        messageId: m.messageId,
        key: m.key,
        headers: m.headers,
        payload: m.payload,
      }));
}

/** The memory publisher, refusing one destination for good as a broker refuses a bad name. */
function memoryPublisher(): MemoryPublisher {
  const memory = createMemoryPublisher();
  memory.failWhen((m) =>
    m.destination === REFUSED
      ? { error: new Error('no such destination'), retriable: false }
      : undefined,
  );
  return memory;
}

/** A publisher that passes calls to `inner` after `change` rewrote them. */
function tampered(
  inner: Publisher,
  change: {
    messages?: (messages: readonly OutgoingMessage[]) => OutgoingMessage[];
    results?: (results: PublishResult[]) => PublishResult[];
    afterClose?: boolean;
  },
): Publisher {
  let closed = false;
  return {
    async publish(messages) {
      if (closed && change.afterClose === true) {
        return messages.map((m) => ({ messageId: m.messageId, ok: true as const }));
      }
      const results = await inner.publish(change.messages?.(messages) ?? [...messages]);
      return change.results?.(results) ?? results;
    },
    async close() {
      closed = true;
      await inner.close();
    },
  };
}

/** Runs the contract on `publisher`, reading back what `memory` accepted. */
function check(
  publisher: Publisher,
  memory: MemoryPublisher,
  extra: Partial<PublisherContractOptions> = {},
): Promise<ContractCheck[]> {
  return checkPublisherContract({
    publisher,
    destination: DESTINATION,
    receive: receiveFrom(memory),
    ...extra,
  });
}

const failed = (checks: readonly ContractCheck[]): string[] =>
  checks.filter((c) => !c.ok).map((c) => c.clause);

describe('checkPublisherContract', () => {
  it('passes the in-memory publisher on every clause', async () => {
    const memory = memoryPublisher();
    const checks = await check(memory, memory, { invalidDestination: REFUSED });
    expect(checks.map((c) => c.clause)).toEqual(Object.values(CONTRACT_CLAUSES));
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(memory.closed).toBe(true);
  });

  it('fails a publisher that returns its results out of order, or throws for a bad destination', async () => {
    const memory = memoryPublisher();
    const reversed = tampered(memory, { results: (r) => [...r].reverse() });
    const checks = await check(reversed, memory, { invalidDestination: REFUSED });
    expect(failed(checks)).toEqual([CONTRACT_CLAUSES.results, CONTRACT_CLAUSES.refused]);
    expect(checks.find((c) => !c.ok)?.problem).toMatch(/result 0 is for/);

    const throwing = memoryPublisher();
    const strict = tampered(throwing, {
      messages: (messages) => {
        if (messages.some((m) => m.destination === REFUSED)) throw new Error('bad destination');
        return [...messages];
      },
    });
    const second = await check(strict, throwing, { invalidDestination: REFUSED });
    // The valid message of that call was never sent either: it is missing downstream.
    expect(failed(second)).toEqual([CONTRACT_CLAUSES.refused, CONTRACT_CLAUSES.delivered]);
    expect(second.find((c) => c.clause === CONTRACT_CLAUSES.refused)?.problem).toMatch(
      /threw Error: bad destination/,
    );
  });

  it('fails a publisher that drops a header, changes the payload or loses a key', async () => {
    for (const rewrite of [
      (m: OutgoingMessage): OutgoingMessage => ({ ...m, headers: {} }),
      (m: OutgoingMessage): OutgoingMessage => ({ ...m, payload: new Uint8Array([1]) }),
      (m: OutgoingMessage): OutgoingMessage => ({ ...m, key: null }),
    ]) {
      const memory = memoryPublisher();
      const tamperedPublisher = tampered(memory, { messages: (ms) => ms.map(rewrite) });
      const checks = await check(tamperedPublisher, memory);
      expect(failed(checks)).toContain(CONTRACT_CLAUSES.delivered);
    }
  });

  it("fails a publisher that reorders a key's messages, unless the destination does not order", async () => {
    const reorder = (messages: readonly OutgoingMessage[]): OutgoingMessage[] => {
      const out = [...messages];
      const i = out.findIndex((m) => m.key === 'key-0');
      const j = out.findIndex((m, k) => k > i && m.key === 'key-0');
      if (i >= 0 && j >= 0) [out[i], out[j]] = [out[j]!, out[i]!];
      return out;
    };
    // The results come back in input order: only what arrives gives the swap away.
    const run = async (ordersByKey: boolean) => {
      const memory = memoryPublisher();
      const swapping: Publisher = {
        async publish(messages) {
          const results = await memory.publish(reorder(messages));
          const byId = new Map(results.map((r) => [r.messageId, r]));
          return messages.map((m) => byId.get(m.messageId)!);
        },
        close: () => memory.close(),
      };
      return check(swapping, memory, { ordersByKey });
    };
    const ordered = await run(true);
    expect(failed(ordered)).toEqual([CONTRACT_CLAUSES.order]);
    expect(ordered.find((c) => !c.ok)?.problem).toMatch(/^key key-0: arrived/);
    expect(failed(await run(false))).toEqual([]);
  });

  it('fails a publisher that still publishes after close', async () => {
    const memory = memoryPublisher();
    const checks = await check(tampered(memory, { afterClose: true }), memory);
    expect(failed(checks)).toEqual([CONTRACT_CLAUSES.close]);
  });
});
