import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    transport: 'src/transport-kit.ts',
    retry: 'src/retry/index.ts',
    admin: 'src/admin/index.ts',
    'testing/index': 'src/testing/index.ts',
    pg: 'src/adapters/pg.ts',
    kysely: 'src/adapters/kysely.ts',
    drizzle: 'src/adapters/drizzle.ts',
    typeorm: 'src/adapters/typeorm.ts',
  },
  format: ['cjs', 'esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // One copy of each shared module (errors above all) for every entry, in both formats.
  splitting: true,
});
