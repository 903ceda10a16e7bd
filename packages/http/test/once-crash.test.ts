import { onceKey } from '@justonce/core';
import { databaseUrl } from '../../core/test/db';
import { killChildren } from '../../../test-support/child-process';
import {
  listEffects,
  openEffectsStore,
  remoteEffectKeys,
  type EffectsStore,
} from '../../../test-support/effects';
import { freshKey, postOrder } from './support/client';
import { spawnOnceChild } from './fixtures/once-child';
import { ONCE_ROUTE, serveOnceApp } from './support/once-app';

let store: EffectsStore;

beforeAll(async () => {
  store = await openEffectsStore();
});
afterEach(async () => {
  await killChildren();
});
afterAll(async () => {
  await store.dispose();
});

const LEASE_MS = 1_500;

it('ctx.once in a route: killed between the remote call and its record, the retry calls again with the same key, once; later retries replay', async () => {
  const key = freshKey('once');
  const child = spawnOnceChild(
    { databaseUrl: databaseUrl(), schema: store.schema, leaseMs: LEASE_MS },
    'once.after-effect',
  );
  const { url } = await child.next('listening', 60_000);
  // The child dies in the middle of the request: the client sees the connection drop.
  await expect(postOrder(url, { key, body: { item: 'book' } })).rejects.toThrow();
  expect((await child.exited).signal).toBe('SIGKILL');
  const stepKey = onceKey(
    { kind: 'operation', namespace: ONCE_ROUTE.operation, scope: 'default', id: key },
    ONCE_ROUTE.step,
  );
  expect(await remoteEffectKeys(store, key)).toEqual([stepKey]);

  const app = await serveOnceApp(store, LEASE_MS);
  try {
    // Waits out the dead owner's lease on the request, then on the step: calls again.
    const retry = await postOrder(app.url, { key, body: { item: 'book' } });
    expect(retry.status).toBe(201);
    expect(retry.json).toEqual({ charged: stepKey });
    const replay = await postOrder(app.url, { key, body: { item: 'book' } });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  } finally {
    await app.close();
  }
  expect(await remoteEffectKeys(store, key)).toEqual([stepKey, stepKey]);
  const business = (await listEffects(store)).filter((row) => row.messageId === key);
  expect(business.map((row) => row.note)).toEqual(['remote', 'remote', 'finish']);
});
