/**
 * The demo's in-process failures: a throw at a named step stands for the process dying
 * there (everything the open transaction wrote rolls back; what committed stays), as the
 * SIGKILLs do in the multi-process example.
 */
import type { Order } from '../orders/contract';
import type { PaymentStep } from '../payments/handler';

/** Failures that fired, per step. */
export interface InjectedFailures {
  /** The order and its event written, the transaction not committed: the request answers 500. */
  readonly orderWritten: number;
  /** The provider charged, the charge's record not written: the delivery fails. */
  readonly charged: number;
  /** The payment and its event written, the inbox's transaction not committed. */
  readonly recorded: number;
}

/** Thrown at an injected failure. */
export class InjectedFailure extends Error {
  override readonly name = 'InjectedFailure';
}

/** Injects failures at `rate` per step, once per order at most for each payment step. */
export function inProcessFailures(random: () => number, rate: number) {
  const counts = { orderWritten: 0, charged: 0, recorded: 0 };
  const hit = { charged: new Set<string>(), recorded: new Set<string>() };
  return {
    onOrderWritten(order: Order): void {
      if (random() >= rate) return;
      counts.orderWritten += 1;
      throw new InjectedFailure(`injected: order ${order.orderId} written, not committed`);
    },
    onPaymentStep(step: PaymentStep, orderId: string): void {
      if (hit[step].has(orderId) || random() >= rate) return;
      hit[step].add(orderId);
      counts[step] += 1;
      throw new InjectedFailure(`injected: ${step} for order ${orderId}`);
    },
    counts: (): InjectedFailures => ({ ...counts }),
  };
}
