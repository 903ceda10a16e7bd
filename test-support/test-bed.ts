/**
 * What a test file (or a `describe`) opens once for all its tests: `open` runs in
 * `beforeAll`, `afterEachTest` after each test, `close` in `afterAll`. The returned object
 * is empty until `beforeAll` has filled it with what `open` resolved to, so read its fields
 * inside hooks and tests, never at the top of the file.
 */
export function useTestBed<T extends object>(hooks: {
  readonly open: () => Promise<T>;
  readonly afterEachTest?: (bed: T) => Promise<void>;
  readonly close: (bed: T) => Promise<void>;
}): T {
  const bed = {} as T;
  let opened = false;
  beforeAll(async () => {
    Object.assign(bed, await hooks.open());
    opened = true;
  });
  afterEach(async () => {
    if (opened) await hooks.afterEachTest?.(bed);
  });
  afterAll(async () => {
    if (opened) await hooks.close(bed);
  });
  return bed;
}
