/**
 * The payments service's client of the payment provider. It passes the idempotency key on
 * (the provider charges once per key), gives each call a time limit, and calls again with
 * the same key after a 503 or a time-out: the provider may have charged on a call that timed
 * out, and the same key makes it answer that charge instead of charging twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

/** A charge as the provider answers it. */
export const Charge = z.object({
  paymentId: z.string(),
  orderId: z.string(),
  amountCents: z.number().int(),
  currency: z.string(),
  status: z.literal('captured'),
});
export type Charge = z.infer<typeof Charge>;

/** What to charge. */
export interface ChargeRequest {
  readonly orderId: string;
  readonly amountCents: number;
  readonly currency: string;
}

/** The provider did not answer a charge usably; calling again with the same key is safe. */
export class ProviderUnavailableError extends Error {
  override readonly name = 'ProviderUnavailableError';
  readonly retriable = true;
}

/** Charges through the provider. */
export interface ProviderClient {
  charge(
    request: ChargeRequest,
    options: { readonly idempotencyKey: string; readonly signal?: AbortSignal },
  ): Promise<Charge>;
}

/** Options of {@link createProviderClient}. */
export interface ProviderClientOptions {
  readonly url: string;
  /** Time limit of one call, in milliseconds. */
  readonly timeoutMs: number;
  /** Calls per charge before giving up with {@link ProviderUnavailableError}. Default 3. */
  readonly tries?: number;
}

/** A client of the provider at `url`. */
export function createProviderClient(options: ProviderClientOptions): ProviderClient {
  const tries = options.tries ?? 3;
  const callOnce = async (
    request: ChargeRequest,
    key: string,
    signal: AbortSignal | undefined,
  ): Promise<Charge> => {
    const timeout = AbortSignal.timeout(options.timeoutMs);
    let response: Response;
    try {
      response = await fetch(`${options.url}/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(request),
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
    } catch (error) {
      throw new ProviderUnavailableError(`the provider did not answer: ${String(error)}`, {
        cause: error,
      });
    }
    const body: unknown = await response.json().catch(() => undefined);
    const charge = Charge.safeParse(body);
    if (response.ok && charge.success) return charge.data;
    throw new ProviderUnavailableError(`the provider answered ${response.status}`);
  };
  return {
    async charge(request, { idempotencyKey, signal }) {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await callOnce(request, idempotencyKey, signal);
        } catch (error) {
          if (attempt >= tries || signal?.aborted) throw error;
          await sleep(25 * 2 ** attempt);
        }
      }
    },
  };
}
