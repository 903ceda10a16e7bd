import fc from 'fast-check';
import { backlogFigure, bytesFigure } from './status';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

describe('bytesFigure', () => {
  it('shows sizes in powers of 1024, whole bytes below 1 KiB', () => {
    expect(bytesFigure(0)).toBe('0 B');
    expect(bytesFigure(1023)).toBe('1023 B');
    expect(bytesFigure(1024)).toBe('1.0 KiB');
    expect(bytesFigure(1536)).toBe('1.5 KiB');
    expect(bytesFigure(1024 ** 3)).toBe('1.0 GiB');
    expect(bytesFigure(-5)).toBe('0 B');
    // 1023.96 KiB would round to 1024.0 KiB: it is 1.0 MiB.
    expect(bytesFigure(1024 * 1024 - 40)).toBe('1.0 MiB');
  });

  it('gives, for any size, a figure below 1024 of its unit that reads back to within a twentieth of that unit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (count) => {
        const match = /^(\d+(?:\.\d)?) (\w+)$/.exec(bytesFigure(count));
        expect(match).not.toBeNull();
        const power = UNITS.indexOf(match![2]!);
        expect(power).toBeGreaterThanOrEqual(0);
        const value = Number(match![1]);
        expect(value).toBeLessThan(1024);
        expect(Math.abs(value * 1024 ** power - count)).toBeLessThanOrEqual(
          power === 0 ? 0 : 0.05 * 1024 ** power,
        );
      }),
    );
  });
});

describe('backlogFigure', () => {
  it('says "at least" at the limit', () => {
    expect(backlogFigure(5, 10)).toBe('5');
    expect(backlogFigure(10, 10)).toBe('≥ 10');
  });
});
