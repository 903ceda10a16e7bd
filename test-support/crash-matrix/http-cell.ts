/**
 * The `http` scenario of the crash-point matrix: a client sends every request twice with the
 * same `Idempotency-Key` to the HTTP child of `http-child.ts`, which dies (as often as the
 * size asks) after a request's commit and before its response. The client then does what a
 * client does with a request cut off: it retries the key on the restarted server, and must
 * get the committed response as a replay (the dead process's body, byte for byte) without
 * the handler running again. Every later copy of a key must be the same replay.
 */
import { randomBytes } from 'node:crypto';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '@justonce/http';
import { databaseUrl } from '../../packages/core/test/db';
import { openEffectsStore } from '../effects';
import type { MatrixCell } from './cells';
import { crashEnv, lostAndDoubled, type CellCounts, type CellSize } from './cell-run';
import { spawnHttpChild, type HttpJob } from './http-child';

/** One response as the client saw it. */
interface Answer {
  readonly status: number;
  readonly replayed: boolean;
  readonly body: string;
}

async function send(port: number, key: string): Promise<Answer | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/orders`, {
      method: 'POST',
      headers: { [IDEMPOTENCY_KEY_HEADER]: key, 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    });
    return {
      status: response.status,
      replayed: response.headers.get(IDEMPOTENT_REPLAYED_HEADER) === 'true',
      body: await response.text(),
    };
  } catch {
    // The connection was cut: the server died with the request.
    return undefined;
  }
}

/** Runs the `http` cell; resolves to what it counted. */
export async function runHttpCell(cell: MatrixCell, size: CellSize): Promise<CellCounts> {
  const store = await openEffectsStore();
  const operation = `op-${randomBytes(4).toString('hex')}`;
  const job: HttpJob = { databaseUrl: databaseUrl(), schema: store.schema, operation };
  let kills = 0;
  const start = async () => {
    const child = spawnHttpChild(job, kills < size.kills ? crashEnv(cell) : undefined);
    return { child, port: (await child.next('listening')).port };
  };
  let server = await start();
  try {
    const keys = Array.from({ length: size.messages }, (_, i) => `${operation}-${i}`);
    const first = new Map<string, Answer>();
    const problems: string[] = [];
    for (const key of keys) {
      for (let copy = 0; copy < 2; copy += 1) {
        let answer = await send(server.port, key);
        while (answer === undefined) {
          const exit = await server.child.exited;
          if (exit.signal !== 'SIGKILL') throw new Error(`server exited: ${server.child.stderr()}`);
          kills += 1;
          const dead = server.child.process.pid;
          server = await start();
          answer = await send(server.port, key);
          // The first copy was cut off after its commit: the retry must be its replay.
          const body = answer === undefined ? undefined : (JSON.parse(answer.body) as unknown);
          if (!answer?.replayed || (body as { pid?: number } | undefined)?.pid !== dead) {
            problems.push(`${key}: the retry after the kill was ${JSON.stringify(answer)}`);
          }
        }
        const earlier = first.get(key);
        if (earlier === undefined) first.set(key, answer);
        else if (
          !answer.replayed ||
          answer.body !== earlier.body ||
          answer.status !== earlier.status
        ) {
          problems.push(`${key}: copy ${copy + 1} was ${JSON.stringify(answer)}`);
        }
      }
    }
    const counts = lostAndDoubled(await store.effectCounts(operation), keys);
    return { kills, ...counts, ...(problems.length > 0 ? { problem: problems.join('; ') } : {}) };
  } finally {
    await server.child.kill();
    await store.dispose();
  }
}
