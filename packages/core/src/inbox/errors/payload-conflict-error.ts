import { JustonceError } from '../../errors/justonce-error';

/**
 * A message arrived with an id this consumer already holds a record for, but its payload
 * fingerprint differs: it is a different message reusing the id, not a redelivery. It is
 * dead-lettered and never treated as the original.
 */
export class PayloadConflictError extends JustonceError {
  constructor(details: {
    readonly messageId: string;
    readonly storedFingerprint: string | null;
    readonly fingerprint: string;
    readonly storedStatus: string;
  }) {
    super(
      'PAYLOAD_CONFLICT',
      `message id "${details.messageId}" was already seen with a different payload`,
      { retriable: false, details },
    );
  }
}
