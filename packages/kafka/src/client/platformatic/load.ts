// @platformatic/kafka is published as ES modules only. It is loaded on first use, with a
// dynamic import kept out of reach of the compilers that would turn it into `require`: the
// CommonJS build of this package and the tests (compiled to CommonJS) could not load it so.

import type * as PlatformaticKafkaModule from '@platformatic/kafka';

/** The module's exports. */
export type PlatformaticKafka = typeof PlatformaticKafkaModule;

let loading: Promise<PlatformaticKafka> | undefined;

/** Loads @platformatic/kafka once; later calls share the first load. @internal */
export function loadPlatformaticKafka(): Promise<PlatformaticKafka> {
  // A direct eval keeps `import()` as written: the runtime, not the compiler, resolves it.
  loading ??= (eval("import('@platformatic/kafka')") as Promise<PlatformaticKafka>).catch(
    (error: unknown) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}
