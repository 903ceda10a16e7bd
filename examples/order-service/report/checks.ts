/** The invariants of a run of the order flow, checked on its figures. */
import type { LoadResult } from '../load/run-load';
import type { Outcome } from './collect';

/** One invariant and whether it held. */
export interface Check {
  readonly name: string;
  readonly ok: boolean;
}

/** A run's figures: what was sent, what the tables hold, and what was done to the services. */
export interface FlowReport {
  /** One line saying what ran where. */
  readonly title: string;
  /** Orders asked for. */
  readonly orders: number;
  readonly load: LoadResult;
  readonly outcome: Outcome;
  /** Whether the flow settled (everything shipped, nothing in flight) within the time limit. */
  readonly settled: boolean;
  /** From the first request until settled, in milliseconds. */
  readonly wallMs: number;
  /** The faults injected, as table rows (they differ between the example and the demo). */
  readonly faults: readonly (readonly [string, string])[];
  /** Where the stores ran, and how long they took to open. */
  readonly environment: readonly (readonly [string, string])[];
  readonly checks: readonly Check[];
  readonly ok: boolean;
}

/** The checks every run makes, followed by `extra` ones. */
export function flowChecks(
  orders: number,
  load: LoadResult,
  outcome: Outcome,
  settled: boolean,
  extra: readonly Check[] = [],
): Check[] {
  const accepted = load.accepted.length;
  const tables = Object.values(outcome.ledgers);
  const { ledgers } = outcome;
  return [
    {
      name: `every order was answered (${accepted} of ${orders}, ${load.failures.length} gave up)`,
      ok: accepted === orders && load.failures.length === 0,
    },
    {
      name:
        `orders (${ledgers.orders.rows}) = order.created events (${ledgers.events.rows}) = ` +
        `payments (${ledgers.payments.rows}) = provider charges (${ledgers.charges.rows}) = ` +
        `shipments (${ledgers.shipments.rows}) = accepted (${accepted})`,
      ok: tables.every((t) => t.rows === accepted),
    },
    {
      name: 'nothing doubled: no order id twice in any table, no key with two orders, no order charged twice',
      ok: tables.every((t) => t.doubles === 0) && outcome.doubledKeys === 0,
    },
    {
      name: 'nothing lost: every accepted order has its event, payment, charge and shipment',
      ok: tables.every((t) => t.lost === 0 && t.unknown === 0),
    },
    {
      name: 'duplicate requests got the first answer byte for byte; a key reused with another body got 422',
      ok: load.mismatches === 0 && load.conflictsAccepted === 0,
    },
    {
      name: 'outboxes drained, no dead events, no dead letters',
      ok: outcome.pendingEvents === 0 && outcome.deadEvents === 0 && outcome.deadLetters === 0,
    },
    { name: 'settled within the time limit', ok: settled },
    ...extra,
  ];
}
