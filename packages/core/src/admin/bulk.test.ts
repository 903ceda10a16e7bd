import { ConfigurationError } from '../errors/configuration-error';
import { JustonceError } from '../errors/justonce-error';
import { StoreTimeoutError } from '../store/errors/store-timeout-error';
import { runBulk } from './bulk';

describe('runBulk (admin.bulk)', () => {
  it('acts on each id in turn: false, null and a refusal fail the item, the rest are done', async () => {
    const order: string[] = [];
    const result = await runBulk(['1', '2', '3', '4', '5'], async (id) => {
      order.push(id);
      if (id === '2') return false;
      if (id === '3') return null;
      if (id === '4') throw new ConfigurationError('no destination');
      return id === '5' ? undefined : `new-${id}`;
    });
    expect(order).toEqual(['1', '2', '3', '4', '5']);
    expect(result.done).toEqual([
      { id: '1', result: 'new-1' },
      { id: '5', result: undefined },
    ]);
    expect(result.failed.map((f) => [f.id, f.error?.code])).toEqual([
      ['2', undefined],
      ['3', undefined],
      ['4', 'INVALID_CONFIG'],
    ]);
  });

  it.each([
    ['a retriable justonce error (a store time limit)', new StoreTimeoutError('query', 35_000)],
    ['any other error (the driver)', new Error('Connection terminated unexpectedly')],
  ])('stops at %s and rejects with it', async (_what, fault) => {
    const tried: string[] = [];
    const outcomes: string[] = [];
    const run = runBulk(
      ['1', '2', '3'],
      async (id) => {
        tried.push(id);
        if (id === '2') throw fault;
        return true;
      },
      { onItem: (outcome) => outcomes.push(outcome.id) },
    );
    await expect(run).rejects.toBe(fault);
    expect(tried).toEqual(['1', '2']);
    expect(outcomes).toEqual(['1']);
  });

  it('counts a non-retriable justonce error of any code as a failed item', async () => {
    const refusal = new JustonceError('DEAD_LETTER_NOT_REDELIVERABLE', 'no message id');
    const result = await runBulk(['7'], () => Promise.reject(refusal));
    expect(result).toEqual({ done: [], failed: [{ id: '7', error: refusal }] });
  });

  it('takes an async iterable of ids', async () => {
    async function* ids() {
      yield '1';
      yield '2';
    }
    const result = await runBulk(ids(), async (id) => Number(id));
    expect(result.done).toEqual([
      { id: '1', result: 1 },
      { id: '2', result: 2 },
    ]);
  });

  it('refuses bad arguments before any item', async () => {
    const act = jest.fn(async () => true);
    await expect(runBulk(null as never, act)).rejects.toThrow(ConfigurationError);
    await expect(runBulk(['1'], act, { onItem: 'x' as never })).rejects.toThrow(ConfigurationError);
    expect(act).not.toHaveBeenCalled();
  });
});
