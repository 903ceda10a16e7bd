/**
 * The crash-point matrix's HTTP child, both halves in one file (see `child-process.ts`): an
 * HTTP server on node:http serving one route made idempotent by `@justonce/http`'s Fetch
 * adapter. The handler writes one effect per idempotency key in the business transaction
 * and answers with a body that names the key and the process, so a replay can be told from a
 * second run. With `JUSTONCE_CRASH_AT=http.after-commit` the process dies after a request's
 * commit, before its response.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOperations, createStore } from '@justonce/core';
import { idempotent, toNodeListener } from '@justonce/http';
import { childModule, runChild } from '../child-process';
import { writeEffect } from '../effects';

/** What the parent asks the child to serve. Plain data: it travels as JSON. */
export interface HttpJob {
  readonly databaseUrl: string;
  readonly schema: string;
  /** The operation name of the route; also each effect's `consumer` column. */
  readonly operation: string;
}

/** What the child reports on stdout. */
export type HttpReport = { readonly type: 'listening'; readonly port: number };

const httpChild = childModule<HttpJob, HttpReport>(__filename, 'HTTP_CHILD');

/** Spawns an HTTP child with the job, and `env` added to its environment. */
export function spawnHttpChild(job: HttpJob, env?: Readonly<Record<string, string>>) {
  return httpChild.spawn(job, env);
}

async function childMain(): Promise<void> {
  const job = httpChild.job();
  const store = await createStore({ connectionString: job.databaseUrl, schema: job.schema });
  const operations = createOperations({ store });
  const handle = idempotent(
    { operations, operation: job.operation, scope: 'shared' },
    async (_request, { trx, key }) => {
      await writeEffect(trx, store, key ?? '', { consumer: job.operation, note: 'http' });
      return Response.json({ key, pid: process.pid }, { status: 201 });
    },
  );
  const server = createServer(toNodeListener(handle));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  httpChild.report({ type: 'listening', port: (server.address() as AddressInfo).port });
}

// Run as the child only when spawned on this file, not when a test imports the parent's half.
if (require.main === module) runChild(childMain);
