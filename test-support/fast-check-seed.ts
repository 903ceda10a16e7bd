/**
 * Jest setup: with `FC_SEED` set, every fast-check property of the run starts from that seed,
 * so a run can be repeated exactly (CI sets one, so that a red build is reproducible and never
 * a coin toss); without it each run explores new inputs. `pnpm test:fuzz` runs long and
 * unseeded.
 */
import fc from 'fast-check';

const seed = Number(process.env.FC_SEED);
if (process.env.FC_SEED !== undefined && Number.isSafeInteger(seed)) {
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });
}
