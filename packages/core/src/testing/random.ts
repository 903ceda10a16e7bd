import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { ConfigurationError } from '../errors';

/** A source of numbers in `[0, 1)`, like `Math.random`, but reproducible from a seed. */
export type RandomSource = () => number;

/**
 * A seeded random source (xoroshiro128+ from `pure-rand`): the same seed gives the same
 * sequence, so a test or demo that injects faults at random can be replayed exactly.
 */
export function seededRandom(seed: number): RandomSource {
  if (!Number.isSafeInteger(seed)) {
    throw new ConfigurationError('seed must be a safe integer', { seed });
  }
  const rng = xoroshiro128plus(seed);
  return () => uniformFloat64(rng);
}

/** `count` distinct elements of `items`, chosen with `random` (fewer when `items` is short). */
export function pickDistinct<T>(items: readonly T[], count: number, random: RandomSource): T[] {
  const pool = [...items];
  const picked: T[] = [];
  while (picked.length < count && pool.length > 0) {
    const index = Math.floor(random() * pool.length);
    picked.push(pool.splice(index, 1)[0] as T);
  }
  return picked;
}
