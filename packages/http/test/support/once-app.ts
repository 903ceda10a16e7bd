/**
 * A route whose handler makes a remote call through `ctx.once` (standing in for a payment
 * provider: a row written outside the request's transaction, with the step's key), then
 * writes its business row in the transaction. Served by the Fetch adapter on node:http; the
 * ledger's crash test runs it in a child process and in the test's own.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOperations, type Store } from '@justonce/core';
import { idempotent, toNodeListener } from '@justonce/http';
import { writeEffect, writeRemoteEffect } from '../../../../test-support/effects';

/** The route's operation name, and its one step. */
export const ONCE_ROUTE = { operation: 'pay-order', step: 'charge' } as const;

/** Serves `POST /orders` on port 0; resolves to its URL and its close. */
export async function serveOnceApp(
  store: Store,
  leaseMs: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const operations = createOperations({ store, leaseMs, waitForInProgressMs: 10_000 });
  const handle = idempotent(
    { operations, operation: ONCE_ROUTE.operation, scope: 'shared' },
    async (_request, { trx, key, once }) => {
      const requestKey = key ?? 'none';
      const charge = await once(ONCE_ROUTE.step, async (stepKey) => {
        await writeRemoteEffect(store, requestKey, stepKey);
        return { charged: stepKey };
      });
      await writeEffect(trx, store, requestKey, { note: 'finish' });
      return Response.json(charge, { status: 201 });
    },
  );
  const server = createServer(toNodeListener(handle));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
