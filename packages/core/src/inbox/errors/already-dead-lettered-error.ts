import { JustonceError } from '../../errors/justonce-error';

/**
 * Reported with the `dead-lettered` outcome of a redelivery: the message was dead-lettered
 * by an earlier delivery, so the handler is not run again. The transport should forward
 * it to its dead-letter destination (again, harmlessly) and acknowledge.
 */
export class AlreadyDeadLetteredError extends JustonceError {
  constructor(details: {
    readonly messageId: string;
    readonly deadLetterId: string;
    readonly reason: string;
  }) {
    super(
      'ALREADY_DEAD_LETTERED',
      `message "${details.messageId}" was dead-lettered earlier (${details.reason}, letter ${details.deadLetterId})`,
      { retriable: false, details },
    );
  }
}
