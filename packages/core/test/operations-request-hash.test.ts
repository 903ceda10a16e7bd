import { canonicalJson, requestHash } from '../src';

describe('request hash', () => {
  it('ignores key order at every level', () => {
    const a = { amount: 10, meta: { b: [1, { y: 2, x: 1 }], a: 'z' } };
    const b = { meta: { a: 'z', b: [1, { x: 1, y: 2 }] }, amount: 10 };
    expect(canonicalJson(a)).toBe('{"amount":10,"meta":{"a":"z","b":[1,{"x":1,"y":2}]}}');
    expect(requestHash(a)).toBe(requestHash(b));
    expect(requestHash(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('tells different requests apart', () => {
    expect(requestHash({ amount: 10 })).not.toBe(requestHash({ amount: 1000 }));
    expect(requestHash([1, 2])).not.toBe(requestHash([2, 1]));
    expect(requestHash('10')).not.toBe(requestHash(10));
  });

  it('follows JSON.stringify for dates, undefined and non-finite numbers', () => {
    const value = {
      at: new Date('2026-01-02T03:04:05.000Z'),
      gone: undefined,
      fn: () => 1,
      list: [undefined, Number.NaN, Infinity, -0],
    };
    expect(canonicalJson(value)).toBe(
      '{"at":"2026-01-02T03:04:05.000Z","list":[null,null,null,0]}',
    );
    expect(canonicalJson(undefined)).toBe('null');
    expect(requestHash(undefined)).toBe(requestHash(null));
  });

  it('refuses BigInts and cycles with a typed error', () => {
    const cyclic: unknown[] = [];
    cyclic.push({ back: cyclic });
    for (const bad of [{ n: 1n }, cyclic]) {
      expect(() => requestHash(bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_OPERATION_INPUT' }),
      );
    }
  });

  it('accepts the same object twice when it is not a cycle', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });
});
