import {
  ConfigurationError,
  FinalError,
  createInbox,
  createStore,
  hasErrorCode,
  markNonRetriable,
  rowsOf,
  type HandlerContext,
  type InboxOptions,
  type InboxStep,
} from '../src';
import { ALL_STORE_KINDS, openTestStore } from './db';
import { envelope, freshId, recordingLogger, recordingMeter } from './fixtures/inbox-support';
import { countEffects, createEffectsTable, writeEffect } from '../../../test-support/effects';

type TestStore = Awaited<ReturnType<typeof openTestStore>>;

describe.each(ALL_STORE_KINDS)('inbox on %s', (kind) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await openTestStore(kind);
    await createEffectsTable(store);
  });
  afterAll(async () => {
    await store.dispose();
  });

  const inboxFor = (extra: Partial<InboxOptions> = {}) =>
    createInbox({ store, consumer: freshId('consumer'), ...extra });
  const effect = async (ctx: HandlerContext) => {
    await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
    return 'done';
  };

  async function attemptsRow(consumer: string, messageId: string) {
    const result = await store.knex.raw(
      `select attempts, last_error from ${store.names.table('inbox_attempts')}
        where consumer = ? and message_id = ?`,
      [consumer, messageId],
    );
    return rowsOf<{ attempts: number; last_error: { message: string } | null }>(result)[0];
  }

  describe('the verification table of seed 002', () => {
    it('a duplicate request has one effect and is reported as a duplicate', async () => {
      const inbox = inboxFor();
      const id = freshId();
      const first = await inbox.process(envelope(id), effect);
      const second = await inbox.process(envelope(id), effect);
      expect(first).toMatchObject({
        status: 'processed',
        messageId: id,
        attempt: 1,
        result: 'done',
      });
      expect(second).toEqual({ status: 'duplicate', messageId: id, scope: 'default' });
      expect(await countEffects(store, id)).toBe(1);
    });

    it('different ids with the same data are two effects', async () => {
      const inbox = inboxFor();
      const [a, b] = [freshId(), freshId()];
      const body = JSON.stringify({ item: 'widget', qty: 1 });
      expect((await inbox.process(envelope(a, body), effect)).status).toBe('processed');
      expect((await inbox.process(envelope(b, body), effect)).status).toBe('processed');
      expect((await countEffects(store, a)) + (await countEffects(store, b))).toBe(2);
    });

    it('50 concurrent deliveries of one id have exactly one effect', async () => {
      const inbox = inboxFor();
      const id = freshId();
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, () =>
          inbox.process(envelope(id), async (ctx) => {
            await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
            // Hold the transaction open briefly so the other deliveries pile up on the index.
            await ctx.trx.raw(kind === 'mysql' ? 'select sleep(0.02)' : 'select pg_sleep(0.02)');
          }),
        ),
      );
      const statuses = outcomes.map((o) => o.status);
      expect(statuses.filter((s) => s === 'processed')).toHaveLength(1);
      // Copies counted past maxAttempts before the first reached the dedup record are not
      // failures: they give their attempt back and ask for a redelivery, which is a duplicate.
      const retried = outcomes.filter((o) => o.status === 'failed');
      for (const outcome of retried) {
        expect(outcome).toMatchObject({ retriable: true, error: { code: 'CONCURRENT_DELIVERY' } });
      }
      expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(49 - retried.length);
      for (const _ of retried) {
        expect(await inbox.process(envelope(id), async () => undefined)).toMatchObject({
          status: 'duplicate',
        });
      }
      expect(await countEffects(store, id)).toBe(1);
      expect(await attemptsRow(inbox.consumer, id)).toBeUndefined();
    });

    it('copies counted past maxAttempts while the first has not reached its record are retried, not dead-lettered', async () => {
      const id = freshId();
      let release = (): void => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let counted = (): void => undefined;
      const firstCounted = new Promise<void>((resolve) => (counted = resolve));
      let holding = true;
      // The first copy is held after its count, before its transaction opens: the copies after
      // it find the count at or past the limit with no dedup record yet to wait on.
      const inbox = inboxFor({
        maxAttempts: 1,
        onStep: async (step) => {
          if (step !== 'attempt-counted' || !holding) return;
          holding = false;
          counted();
          await held;
        },
      });
      const first = inbox.process(envelope(id), effect);
      await firstCounted;
      const copies = await Promise.all(
        Array.from({ length: 4 }, () => inbox.process(envelope(id), effect)),
      );
      release();
      const outcomes = [await first, ...copies];
      expect(outcomes.filter((o) => o.status === 'dead-lettered')).toHaveLength(0);
      expect(outcomes.filter((o) => o.status === 'processed')).toHaveLength(1);
      const retried = outcomes.filter((o) => o.status === 'failed');
      expect(retried).toHaveLength(4);
      for (const outcome of retried) {
        expect(outcome).toMatchObject({ retriable: true, error: { code: 'CONCURRENT_DELIVERY' } });
      }
      expect(await countEffects(store, id)).toBe(1);
    });

    it('a retry after a timed-out attempt applies once', async () => {
      const inbox = inboxFor();
      const id = freshId();
      let calls = 0;
      const flaky = async (ctx: HandlerContext) => {
        calls += 1;
        await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
        if (calls === 1) {
          const timeout = new Error('upstream timed out');
          timeout.name = 'TimeoutError';
          throw timeout;
        }
      };
      const first = await inbox.process(envelope(id), flaky);
      expect(first).toMatchObject({ status: 'failed', attempt: 1, retriable: true });
      expect(first.status === 'failed' && first.retryDelayMs).toBeGreaterThanOrEqual(0);
      expect(await countEffects(store, id)).toBe(0);
      const second = await inbox.process(envelope(id), flaky);
      expect(second).toMatchObject({ status: 'processed', attempt: 2 });
      expect(await countEffects(store, id)).toBe(1);
      expect(await inbox.process(envelope(id), flaky)).toMatchObject({ status: 'duplicate' });
      expect(await countEffects(store, id)).toBe(1);
      expect(await attemptsRow(inbox.consumer, id)).toBeUndefined();
    });
  });

  describe('scopes', () => {
    it('the same id in two scopes is two effects, and neither replays the other', async () => {
      const inbox = inboxFor();
      const id = freshId();
      const a = await inbox.process(envelope(id, 'same', { scope: 'tenant-a' }), effect);
      const b = await inbox.process(envelope(id, 'same', { scope: 'tenant-b' }), effect);
      expect(a).toMatchObject({ status: 'processed', scope: 'tenant-a' });
      expect(b).toMatchObject({ status: 'processed', scope: 'tenant-b' });
      expect(await countEffects(store, id, { scope: 'tenant-a' })).toBe(1);
      expect(await countEffects(store, id, { scope: 'tenant-b' })).toBe(1);
      const again = await inbox.process(envelope(id, 'same', { scope: 'tenant-a' }), effect);
      expect(again).toEqual({ status: 'duplicate', messageId: id, scope: 'tenant-a' });
      // A different payload under tenant-b's id is judged against tenant-b's record only.
      const otherScope = await inbox.process(envelope(id, 'other', { scope: 'tenant-c' }), effect);
      expect(otherScope.status).toBe('processed');
    });

    it('consumers are isolated from each other too', async () => {
      const id = freshId();
      expect((await inboxFor().process(envelope(id), effect)).status).toBe('processed');
      expect((await inboxFor().process(envelope(id), effect)).status).toBe('processed');
      expect(await countEffects(store, id)).toBe(2);
    });
  });

  describe('payload fingerprint', () => {
    it('the same id with a different body is a conflict: dead-lettered, never the original', async () => {
      const inbox = inboxFor();
      const id = freshId();
      await inbox.process(envelope(id, 'original'), effect);
      let ran = false;
      const outcome = await inbox.process(envelope(id, 'impostor'), async () => {
        ran = true;
      });
      expect(ran).toBe(false);
      expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'PAYLOAD_CONFLICT' });
      expect(
        hasErrorCode(outcome.status === 'dead-lettered' && outcome.error, 'PAYLOAD_CONFLICT'),
      ).toBe(true);
      expect(await countEffects(store, id)).toBe(1);
      // The original is still a duplicate, not displaced by the conflict.
      expect((await inbox.process(envelope(id, 'original'), effect)).status).toBe('duplicate');
    });

    it('named headers are part of the fingerprint, case-insensitively; others are not', async () => {
      const inbox = inboxFor({ fingerprintHeaders: ['Content-Type'] });
      const id = freshId();
      const headers = { 'content-type': 'application/json', 'x-trace': '1' };
      await inbox.process(envelope(id, '{}', { headers }), effect);
      const sameNamed = await inbox.process(
        envelope(id, '{}', { headers: { 'Content-Type': 'application/json', 'x-trace': '2' } }),
        effect,
      );
      expect(sameNamed.status).toBe('duplicate');
      const otherNamed = await inbox.process(
        envelope(id, '{}', { headers: { 'content-type': 'text/plain' } }),
        effect,
      );
      expect(otherNamed).toMatchObject({ status: 'dead-lettered', reason: 'PAYLOAD_CONFLICT' });
    });

    it('a string body and the same bytes are the same payload', async () => {
      const inbox = inboxFor();
      const id = freshId();
      await inbox.process(envelope(id, 'héllo'), effect);
      const bytes = new Uint8Array(Buffer.from('héllo', 'utf8'));
      expect((await inbox.process(envelope(id, bytes), effect)).status).toBe('duplicate');
    });
  });

  describe('failures and poison messages', () => {
    it('a final error dead-letters at once, keeping body, headers and the error', async () => {
      const inbox = inboxFor();
      const id = freshId();
      const outcome = await inbox.process(
        envelope(id, 'body-1', { headers: { 'x-a': '1' } }),
        async (ctx) => {
          await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
          throw new FinalError('order does not exist');
        },
      );
      expect(outcome).toMatchObject({
        status: 'dead-lettered',
        reason: 'NON_RETRIABLE',
        attempt: 1,
      });
      expect(await countEffects(store, id)).toBe(0);
      const letter = rowsOf<{ error_code: string; error_message: string; headers: unknown }>(
        await store.knex.raw(
          `select error_code, error_message, headers from ${store.names.table('dead_letters')}
            where consumer = ? and message_id = ?`,
          [inbox.consumer, id],
        ),
      );
      expect(letter).toHaveLength(1);
      expect(letter[0]).toMatchObject({
        error_code: 'FINAL',
        error_message: 'order does not exist',
        headers: { 'x-a': '1' },
      });
    });

    it('follows the retry classification: marked or classified non-retriable errors dead-letter at once', async () => {
      const marked = inboxFor();
      const a = freshId();
      const outcome = await marked.process(envelope(a), async () => {
        throw markNonRetriable(new Error('bad reference'));
      });
      expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'NON_RETRIABLE' });

      const custom = inboxFor({
        classify: (error) =>
          error instanceof Error && error.message === 'permanent' ? 'non-retriable' : undefined,
      });
      const b = freshId();
      const permanent = await custom.process(envelope(b), async () => {
        throw new Error('permanent');
      });
      expect(permanent).toMatchObject({ status: 'dead-lettered', reason: 'NON_RETRIABLE' });
      const transient = await custom.process(envelope(freshId()), async () => {
        throw new Error('blip');
      });
      expect(transient).toMatchObject({ status: 'failed', retriable: true });
    });

    it('counts attempts outside the rolled-back transaction and dead-letters after maxAttempts', async () => {
      const inbox = inboxFor({ maxAttempts: 3 });
      const id = freshId();
      let calls = 0;
      const failing = async (ctx: HandlerContext) => {
        calls += 1;
        await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
        throw new Error(`boom ${calls}`);
      };
      expect(await inbox.process(envelope(id), failing)).toMatchObject({
        status: 'failed',
        attempt: 1,
      });
      expect(await attemptsRow(inbox.consumer, id)).toMatchObject({
        attempts: 1,
        last_error: { message: 'boom 1' },
      });
      expect(await inbox.process(envelope(id), failing)).toMatchObject({
        status: 'failed',
        attempt: 2,
      });
      const third = await inbox.process(envelope(id), failing);
      expect(third).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS', attempt: 3 });
      expect(hasErrorCode(third.status === 'dead-lettered' && third.error, 'MAX_ATTEMPTS')).toBe(
        true,
      );
      expect(calls).toBe(3);
      // Redeliveries are acknowledged as dead-lettered without running the handler again.
      const again = await inbox.process(envelope(id), failing);
      expect(again).toMatchObject({ status: 'dead-lettered', reason: 'MAX_ATTEMPTS' });
      expect(third.status === 'dead-lettered' && again.status === 'dead-lettered').toBe(true);
      if (third.status === 'dead-lettered' && again.status === 'dead-lettered') {
        expect(again.deadLetterId).toBe(third.deadLetterId);
      }
      expect(calls).toBe(3);
      expect(await countEffects(store, id)).toBe(0);
      expect(await attemptsRow(inbox.consumer, id)).toBeUndefined();
    });

    it("uses the broker's receive count: past the limit, the handler does not run", async () => {
      const inbox = inboxFor({ maxAttempts: 5 });
      const id = freshId();
      let ran = false;
      const outcome = await inbox.process(
        envelope(id, 'x', { delivery: { receiveCount: 6 } }),
        async () => {
          ran = true;
        },
      );
      expect(ran).toBe(false);
      expect(outcome).toMatchObject({
        status: 'dead-lettered',
        reason: 'MAX_ATTEMPTS',
        attempt: 6,
      });
      const atLimit = await inbox.process(
        envelope(freshId(), 'x', { delivery: { receiveCount: 5 } }),
        effect,
      );
      expect(atLimit).toMatchObject({ status: 'processed', attempt: 5 });
    });

    it('a message already handled is a duplicate even when its receive count is past the limit', async () => {
      const inbox = inboxFor({ maxAttempts: 2 });
      const id = freshId();
      await inbox.process(envelope(id), effect);
      const late = await inbox.process(
        envelope(id, undefined, { delivery: { receiveCount: 9 } }),
        effect,
      );
      expect(late.status).toBe('duplicate');
      expect(await countEffects(store, id)).toBe(1);
    });

    it('skips the counting write on a first delivery, and still counts the skipped one later', async () => {
      const inbox = inboxFor({ maxAttempts: 3 });
      const id = freshId();
      // A first delivery that succeeds leaves no counter behind and costs no counting write.
      const ok = await inbox.process(
        envelope(id, 'x', { delivery: { redelivered: false } }),
        effect,
      );
      expect(ok).toMatchObject({ status: 'processed', attempt: 1 });
      expect(await attemptsRow(inbox.consumer, id)).toBeUndefined();
      // A redelivery (flag only, no count) after a first delivery that died uncounted is attempt 2.
      const other = freshId();
      const seen: number[] = [];
      const outcome = await inbox.process(
        envelope(other, 'x', { delivery: { redelivered: true } }),
        async (ctx) => {
          seen.push(ctx.attempt);
        },
      );
      expect(outcome.status).toBe('processed');
      expect(seen).toEqual([2]);
    });

    // MySQL undoes the failed statement alone and the transaction goes on: its twin below
    // (inbox-mysql.test.ts covers a transaction that a failure ended).
    if (kind !== 'mysql') {
      it('a handler that swallows a failed statement does not commit: the attempt fails', async () => {
        const inbox = inboxFor();
        const id = freshId();
        const outcome = await inbox.process(envelope(id), async (ctx) => {
          await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
          await ctx.trx.raw('select * from no_such_table').catch(() => undefined);
        });
        expect(outcome).toMatchObject({ status: 'failed', retriable: true });
        expect(
          hasErrorCode(outcome.status === 'failed' && outcome.error, 'TRANSACTION_ABORTED'),
        ).toBe(true);
        expect(await countEffects(store, id)).toBe(0);
      });
    }

    if (kind === 'mysql') {
      it('on MySQL a handler that swallows a failed statement commits the rest: the statement alone was undone', async () => {
        const inbox = inboxFor();
        const id = freshId();
        const outcome = await inbox.process(envelope(id), async (ctx) => {
          await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
          await ctx.trx.raw('select * from no_such_table').catch(() => undefined);
        });
        expect(outcome).toMatchObject({ status: 'processed' });
        expect(await countEffects(store, id)).toBe(1);
      });
    }

    it('a statement failure recovered by a savepoint inside the handler still commits', async () => {
      const inbox = inboxFor();
      const id = freshId();
      const outcome = await inbox.process(envelope(id), async (ctx) => {
        await ctx.trx
          .transaction(async (sp) => sp.raw('select * from no_such_table'))
          .catch(() => undefined);
        await writeEffect(ctx.trx, store, ctx.messageId, { scope: ctx.scope });
      });
      expect(outcome.status).toBe('processed');
      expect(await countEffects(store, id)).toBe(1);
    });
  });

  describe('bad input', () => {
    const letterOf = async (consumer: string) =>
      rowsOf<{ reason: string; message_id: string | null; headers: unknown; body: Uint8Array }>(
        await store.knex.raw(
          `select reason, message_id, headers, body from ${store.names.table('dead_letters')}
            where consumer = ? order by id`,
          [consumer],
        ),
      );

    it('a missing id is dead-lettered with body and headers; each delivery gets its own letter', async () => {
      const inbox = inboxFor();
      let ran = false;
      const run = async () => {
        ran = true;
      };
      const outcome = await inbox.process(
        envelope(undefined, 'payload-without-id', { headers: { h: 'v' } }),
        run,
      );
      await inbox.process(envelope(undefined, 'payload-without-id', { headers: { h: 'v' } }), run);
      expect(ran).toBe(false);
      expect(outcome).toMatchObject({
        status: 'dead-lettered',
        reason: 'MISSING_MESSAGE_ID',
        messageId: undefined,
      });
      expect(
        hasErrorCode(outcome.status === 'dead-lettered' && outcome.error, 'MISSING_MESSAGE_ID'),
      ).toBe(true);
      const letters = await letterOf(inbox.consumer);
      expect(letters).toHaveLength(2);
      expect(letters[0]).toMatchObject({
        reason: 'MISSING_MESSAGE_ID',
        message_id: null,
        headers: { h: 'v' },
      });
      expect(Buffer.from(letters[0]!.body).toString()).toBe('payload-without-id');
    });

    it('an oversized id is dead-lettered as INVALID_MESSAGE_ID', async () => {
      const inbox = inboxFor({ maxIdLength: 16 });
      const id = 'x'.repeat(17);
      const outcome = await inbox.process(envelope(id), effect);
      expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'INVALID_MESSAGE_ID' });
      expect(
        hasErrorCode(outcome.status === 'dead-lettered' && outcome.error, 'INVALID_MESSAGE_ID'),
      ).toBe(true);
      expect(await letterOf(inbox.consumer)).toEqual([
        expect.objectContaining({ reason: 'INVALID_MESSAGE_ID', message_id: id }),
      ]);
      expect((await inbox.process(envelope('x'.repeat(16)), effect)).status).toBe('processed');
    });

    it('an undecodable body is dead-lettered once; redeliveries are acknowledged', async () => {
      const inbox = inboxFor({ decode: (body) => JSON.parse(String(body)) as unknown });
      const id = freshId();
      const outcome = await inbox.process(envelope(id, '{not json'), effect);
      expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'UNDECODABLE_BODY' });
      expect(
        hasErrorCode(outcome.status === 'dead-lettered' && outcome.error, 'UNDECODABLE_BODY'),
      ).toBe(true);
      const again = await inbox.process(envelope(id, '{not json'), effect);
      expect(again).toMatchObject({ status: 'dead-lettered', reason: 'UNDECODABLE_BODY' });
      const letters = await letterOf(inbox.consumer);
      expect(letters).toHaveLength(1);
      expect(Buffer.from(letters[0]!.body).toString()).toBe('{not json');
      // A decodable message reaches the handler with the decoded payload.
      const payloads: unknown[] = [];
      await inbox.process(envelope(freshId(), '{"a":1}'), async (ctx) => {
        payloads.push(ctx.payload);
      });
      expect(payloads).toEqual([{ a: 1 }]);
    });

    it('a body that is neither bytes nor text is dead-lettered as INVALID_BODY', async () => {
      const inbox = inboxFor();
      const broken = { id: freshId(), headers: {}, delivery: {}, body: { not: 'bytes' } };
      const outcome = await inbox.process(broken as never, effect);
      expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'INVALID_BODY' });
    });

    it('an invalid scope is dead-lettered as INVALID_SCOPE', async () => {
      const inbox = inboxFor();
      const outcome = await inbox.process(envelope(freshId(), 'x', { scope: '' }), effect);
      expect(outcome).toMatchObject({ status: 'dead-lettered', reason: 'INVALID_SCOPE' });
    });
  });

  describe('handler context and steps', () => {
    it('gives the handler trx, attempt, scope, signal and an outbox bound to the message', async () => {
      const inbox = inboxFor();
      const id = freshId();
      const controller = new AbortController();
      let seen: Omit<HandlerContext, 'trx' | 'outbox'> | undefined;
      let eventIds: string[] = [];
      const outcome = await inbox.process(
        envelope(id, 'x', { scope: 'acme', headers: { 'correlation-id': 'corr-1' } }),
        async (ctx) => {
          seen = ctx;
          eventIds = [
            ...(await ctx.outbox.add({ destination: 'events', payload: { n: 1 } })),
            ...(await ctx.outbox.add([{ destination: 'events', payload: { n: 2 } }])),
          ];
        },
        { signal: controller.signal },
      );
      expect(outcome.status).toBe('processed');
      expect(seen).toMatchObject({ messageId: id, scope: 'acme', attempt: 1, payload: 'x' });
      expect(seen?.signal).toBe(controller.signal);
      expect(new Set(eventIds).size).toBe(2);
      const rows = rowsOf<{ message_id: string; headers: string | Record<string, string> }>(
        await store.knex.raw(
          `select message_id, headers from ${store.names.table('outbox')}
            where message_id in (?, ?) order by id`,
          eventIds,
        ),
      );
      expect(rows.map((r) => r.message_id)).toEqual(eventIds);
      // MariaDB returns a JSON column as its text.
      const headers = rows[0]?.headers;
      const parsed: unknown = typeof headers === 'string' ? JSON.parse(headers) : headers;
      expect(parsed).toMatchObject({ 'correlation-id': 'corr-1' });
    });

    it('events added by a failed attempt roll back, and the retry emits the same ids', async () => {
      const inbox = inboxFor();
      const id = freshId();
      const emitted: string[][] = [];
      let fail = true;
      const handler = async (ctx: HandlerContext) => {
        emitted.push(await ctx.outbox.add({ destination: 'events', payload: 'e' }));
        if (fail) throw new Error('first attempt fails');
      };
      expect((await inbox.process(envelope(id), handler)).status).toBe('failed');
      fail = false;
      expect((await inbox.process(envelope(id), handler)).status).toBe('processed');
      expect(emitted[0]).toEqual(emitted[1]);
      const count = rowsOf<{ n: number | string }>(
        await store.knex.raw(
          `select count(*) as n from ${store.names.table('outbox')} where message_id = ?`,
          [emitted[0]![0]!],
        ),
      );
      expect(Number(count[0]?.n)).toBe(1);
    });

    it('runs onStep at each step; a throw at handler-done rolls back like a crash', async () => {
      const steps: InboxStep[] = [];
      let crashAt: InboxStep | undefined = 'handler-done';
      const inbox = inboxFor({
        onStep: (step) => {
          steps.push(step);
          if (step === crashAt) throw new Error(`crash at ${step}`);
        },
      });
      const id = freshId();
      await expect(inbox.process(envelope(id), effect)).rejects.toThrow('crash at handler-done');
      expect(await countEffects(store, id)).toBe(0);
      crashAt = 'committed';
      await expect(inbox.process(envelope(id), effect)).rejects.toThrow('crash at committed');
      expect(await countEffects(store, id)).toBe(1);
      crashAt = undefined;
      expect((await inbox.process(envelope(id), effect)).status).toBe('duplicate');
      expect(await countEffects(store, id)).toBe(1);
      expect(steps).toEqual([
        'received',
        'attempt-counted',
        'handler-done',
        'received',
        'attempt-counted',
        'handler-done',
        'committed',
        'received',
        'attempt-counted',
      ]);
    });
  });

  describe('observability', () => {
    it('counts every outcome and keeps payloads out of logs unless asked', async () => {
      const { meter, points } = recordingMeter();
      const { logger, lines } = recordingLogger();
      const inbox = inboxFor({ meter, logger, maxAttempts: 1 });
      const id = freshId();
      await inbox.process(envelope(id, 'secret-body'), effect);
      await inbox.process(envelope(id, 'secret-body'), effect);
      await inbox.process(envelope(id, 'another-secret'), effect);
      await inbox.process(envelope(freshId(), 'secret-body'), async () => {
        throw new Error('nope');
      });
      const retrying = inboxFor({ meter, logger, maxAttempts: 2 });
      await retrying.process(envelope(freshId(), 'secret-body'), async () => {
        throw new Error('again');
      });
      const outcomes = points
        .filter((p) => p.instrument === 'justonce.inbox.messages')
        .map((p) => p.attributes.outcome);
      expect(outcomes).toEqual(['processed', 'duplicate', 'conflict', 'dead_lettered', 'retried']);
      expect(points.some((p) => p.instrument === 'justonce.inbox.handler.duration')).toBe(true);
      expect(JSON.stringify(lines)).not.toContain('secret');
      expect(lines.some((l) => l.level === 'error' && l.fields.reason === 'PAYLOAD_CONFLICT')).toBe(
        true,
      );

      const verbose = recordingLogger();
      const opted = inboxFor({ logger: verbose.logger, logPayloads: true });
      await opted.process(envelope(freshId(), 'visible-body'), effect);
      expect(JSON.stringify(verbose.lines)).toContain('visible-body');
    });
  });
});

describe('inbox configuration', () => {
  let store: Awaited<ReturnType<typeof createStore>>;
  beforeAll(async () => {
    // Construction never touches the database; a lazily connecting store is enough.
    store = await createStore({ connectionString: 'postgres://127.0.0.1:1/none' });
  });
  afterAll(async () => {
    await store.close();
  });

  it.each<[string, Partial<InboxOptions>]>([
    ['a missing consumer', { consumer: '' }],
    ['a consumer too long', { consumer: 'c'.repeat(201) }],
    ['maxAttempts of 0', { maxAttempts: 0 }],
    ['a fractional maxAttempts', { maxAttempts: 1.5 }],
    ['maxIdLength over the index limit', { maxIdLength: 5000 }],
    ['an empty fingerprint header name', { fingerprintHeaders: [''] }],
    [
      'retention shorter than the redelivery horizon',
      { retentionMs: 1000, redeliveryHorizonMs: 2000 },
    ],
    ['a decode that is not a function', { decode: 'json' as never }],
    ['an empty default scope', { defaultScope: '' }],
    ['a logger without methods', { logger: {} as never }],
  ])('refuses %s', (_what, extra) => {
    expect(() => createInbox({ store, consumer: 'c', ...extra })).toThrow(ConfigurationError);
    try {
      createInbox({ store, consumer: 'c', ...extra });
    } catch (error) {
      expect(hasErrorCode(error, 'INVALID_CONFIG')).toBe(true);
    }
  });

  it('refuses a missing store', () => {
    expect(() => createInbox({ consumer: 'c' } as InboxOptions)).toThrow(ConfigurationError);
  });

  it('accepts the defaults', () => {
    const inbox = createInbox({
      store,
      consumer: 'c',
      retentionMs: 5000,
      redeliveryHorizonMs: 5000,
    });
    expect(inbox.consumer).toBe('c');
  });
});
