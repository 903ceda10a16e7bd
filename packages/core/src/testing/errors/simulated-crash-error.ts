import { JustonceError, hasErrorCode } from '../../errors';
import type { CrashPoint } from '../faults';

/**
 * Thrown by the in-memory broker's fault injection at a named {@link CrashPoint}, to stand
 * for the consumer process dying there. Whatever transaction is open rolls back; the broker
 * does not acknowledge and redelivers the message, as a real broker would after a crash.
 */
export class SimulatedCrashError extends JustonceError {
  /** Where the crash was injected. */
  readonly point: CrashPoint;

  constructor(point: CrashPoint, messageId: string | undefined) {
    super('SIMULATED_CRASH', `simulated crash at ${point} for message ${messageId ?? '(no id)'}`, {
      retriable: true,
      details: { point, messageId },
    });
    this.point = point;
  }
}

/** True when `value` is a {@link SimulatedCrashError} from any copy of this package. */
export function isSimulatedCrash(value: unknown): value is SimulatedCrashError {
  return hasErrorCode(value, 'SIMULATED_CRASH');
}
