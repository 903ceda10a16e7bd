/**
 * Booting real Nest applications for the tests: a test module compiled with
 * `@nestjs/testing`, served on Express or Fastify at an ephemeral port, and a schema of its
 * own on the test PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { createStore, type Store } from '@justonce/core';
import { databaseUrl } from '../../../test-support/services';

/** The two HTTP platforms of Nest. */
export const PLATFORMS = ['express', 'fastify'] as const;
export type Platform = (typeof PLATFORMS)[number];

export { amqpUrl, databaseUrl } from '../../../test-support/services';

/** A unique name (schema, queue) for one test file. */
export function uniqueName(label: string): string {
  return `${label}_${randomBytes(5).toString('hex')}`;
}

/** A running application and its base URL. */
export interface RunningApp {
  readonly app: INestApplication;
  /** e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
}

/** Compiles `metadata` into an application on `platform`, listening on an ephemeral port. */
export async function boot(platform: Platform, metadata: ModuleMetadata): Promise<RunningApp> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app =
    platform === 'express'
      ? moduleRef.createNestApplication({ logger: false })
      : moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), {
          logger: false,
        });
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close();
    throw error;
  }
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

/**
 * A store of the test's own on PostgreSQL, for setting up tables and reading results (the
 * applications open their own); `dispose` drops the schema.
 */
export async function testSchema(
  label: string,
): Promise<{ schema: string; store: Store; dispose(): Promise<void> }> {
  const schema = uniqueName(`nest_${label}`);
  const store = await createStore({ connectionString: databaseUrl(), schema });
  await store.migrate();
  return {
    schema,
    store,
    dispose: async () => {
      await store.knex.raw(`drop schema if exists "${schema}" cascade`);
      await store.close();
    },
  };
}

/** A promise with its resolver. */
export function gate<T = void>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}
