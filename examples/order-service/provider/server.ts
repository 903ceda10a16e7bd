/**
 * The fake payment provider: `POST /charges` with an `Idempotency-Key` header charges once per
 * key, like a real card processor's API. It misbehaves on purpose, with seeded randomness:
 * some calls are answered 503 before anything is charged, and some are charged but answered
 * only after the client has given up waiting (the client cannot tell whether it was charged).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { Ledger } from './ledger';

/** Options of {@link createProviderServer}. */
export interface ProviderOptions {
  readonly ledger: Ledger;
  /** Random source in [0, 1) (seeded, so a run can be replayed). */
  readonly random: () => number;
  /** Share of calls answered 503 without charging. */
  readonly failRate: number;
  /** Share of calls charged but answered late. */
  readonly slowRate: number;
  /** How late a slow answer comes, in milliseconds. */
  readonly slowMs: number;
}

const ChargeBody = z.object({
  orderId: z.string().min(1),
  amountCents: z.number().int().positive(),
  currency: z.string().length(3),
});

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(Buffer.from(chunk));
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

async function handleCharge(
  options: ProviderOptions,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const key = request.headers['idempotency-key'];
  const body = ChargeBody.safeParse(await readJson(request));
  if (typeof key !== 'string' || key === '' || !body.success) {
    send(response, 400, { error: 'an Idempotency-Key header and a valid charge are required' });
    return;
  }
  const draw = options.random();
  if (draw < options.failRate) {
    await options.ledger.recordCall('unavailable', false);
    send(response, 503, { error: 'try again later' });
    return;
  }
  const slow = draw < options.failRate + options.slowRate;
  const { charge, replayed } = await options.ledger.charge(key, body.data);
  await options.ledger.recordCall(replayed ? 'replayed' : 'charged', slow);
  if (slow) await sleep(options.slowMs);
  send(response, replayed ? 200 : 201, charge);
}

/** The provider as an HTTP server, not listening yet. */
export function createProviderServer(options: ProviderOptions): Server {
  return createServer((request, response) => {
    if (request.method !== 'POST' || request.url !== '/charges') {
      send(response, 404, { error: 'not found' });
      return;
    }
    handleCharge(options, request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, { error: String(error) });
    });
  });
}
