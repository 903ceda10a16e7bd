/**
 * Waiting for the run to settle: every accepted order shipped, both outboxes published, the
 * payments consumer caught up with the topic and the shipping queue empty, twice in a row
 * half a second apart (so that re-published copies still in flight are handled before the
 * tables are counted).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { rowsOf, type Store } from '@justonce/core';
import type { RunNames } from '../config';
import type { Infrastructure } from './infrastructure';

async function count(store: Store, sql: string): Promise<number> {
  const [row] = rowsOf<{ n: string | number }>(await store.knex.raw(sql));
  return Number(row?.n ?? 0);
}

/** Orders shipped so far (distinct order ids in the shipments table). */
export function shippedCount(store: Store): Promise<number> {
  return count(
    store,
    `select count(distinct order_id) as n from ${store.names.table('shipments')}`,
  );
}

/** Messages the payments group has not committed yet, over the topic's partitions. */
async function kafkaLag(infra: Infrastructure, names: RunNames): Promise<number> {
  const [ends, committed] = await Promise.all([
    infra.admin.fetchTopicOffsets(names.orderTopic),
    infra.admin.fetchOffsets({ groupId: names.paymentsGroup, topics: [names.orderTopic] }),
  ]);
  const at = new Map(
    (committed[0]?.partitions ?? []).map((p) => [p.partition, Math.max(0, Number(p.offset))]),
  );
  return ends.reduce((lag, end) => lag + Number(end.high) - (at.get(end.partition) ?? 0), 0);
}

/** Whether everything is done right now. */
async function quiet(infra: Infrastructure, names: RunNames, accepted: number): Promise<boolean> {
  const { orders, payments, shipping } = infra.stores;
  if ((await shippedCount(shipping)) < accepted) return false;
  const pending = (store: Store) =>
    count(
      store,
      `select count(*) as n from ${store.names.table('outbox')} where status = 'pending'`,
    );
  if ((await pending(orders)) + (await pending(payments)) > 0) return false;
  if ((await kafkaLag(infra, names)) > 0) return false;
  const queue = await infra.channel.checkQueue(names.paymentQueue);
  return queue.messageCount === 0;
}

/** Resolves `true` once settled, `false` after `timeoutMs`. */
export async function waitUntilSettled(
  infra: Infrastructure,
  names: RunNames,
  accepted: number,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let quietBefore = false;
  while (Date.now() < deadline) {
    const now = await quiet(infra, names, accepted);
    if (now && quietBefore) return true;
    quietBefore = now;
    await sleep(500);
  }
  return false;
}
