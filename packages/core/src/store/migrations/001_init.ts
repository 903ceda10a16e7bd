import type { Migration } from '../migration';

/** The schema itself is created by the runner; this records the baseline. */
export const m001Init: Migration = {
  version: 1,
  name: 'init',
  up: () => [],
};
