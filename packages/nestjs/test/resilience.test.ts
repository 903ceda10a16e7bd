/**
 * The module's `idempotency.resilience` default on real Nest applications, on Express and on
 * Fastify: a route whose handler keeps failing opens its breaker, the next request gets 503
 * with `Retry-After` without running, and the probe after `openMs` closes it
 * (docs/load-shedding.md).
 */
import { randomUUID } from 'node:crypto';
import { Body, Controller, Post } from '@nestjs/common';
import { Idempotent, JustonceModule } from '../src';
import { boot, databaseUrl, PLATFORMS, testSchema, type RunningApp } from './support';

const OPEN_MS = 300;
let runs = 0;

@Controller('flaky')
class FlakyController {
  @Post()
  @Idempotent({ operation: 'flaky' })
  async call(@Body() body: { fail: boolean }): Promise<{ ok: true }> {
    runs += 1;
    if (body.fail) throw new Error('the downstream is down');
    return { ok: true };
  }
}

let db: Awaited<ReturnType<typeof testSchema>>;

beforeAll(async () => {
  db = await testSchema('resilience');
});

afterAll(async () => {
  await db.dispose();
});

async function post(app: RunningApp, fail: boolean): Promise<Response> {
  return fetch(`${app.url}/flaky`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-client-id': 'c1',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ fail }),
  });
}

describe.each(PLATFORMS)('on %s', (platform) => {
  let app: RunningApp;

  beforeAll(async () => {
    app = await boot(platform, {
      imports: [
        JustonceModule.forRoot({
          store: { connectionString: databaseUrl(), schema: db.schema },
          idempotency: {
            scope: (request) => request.headers['x-client-id'] as string,
            resilience: {
              budget: false,
              breaker: { trip: { consecutiveFailures: 2 }, openMs: OPEN_MS },
            },
          },
        }),
      ],
      controllers: [FlakyController],
    });
  });

  afterAll(async () => {
    await app.app.close();
  });

  it('answers 503 with Retry-After while the breaker is open, and resumes after the probe', async () => {
    expect((await post(app, true)).status).toBe(500);
    expect((await post(app, true)).status).toBe(500);
    const before = runs;
    const shed = await post(app, false);
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.json()).toMatchObject({ type: 'urn:justonce:problem:circuit-open' });
    expect(runs).toBe(before);
    await new Promise((resolve) => setTimeout(resolve, OPEN_MS + 50));
    expect((await post(app, false)).status).toBe(201);
    expect((await post(app, false)).status).toBe(201);
  });
});
