import { JustonceError } from '@justonce/core';

/**
 * A message SQS would refuse for its content: an attribute name SQS does not allow, an
 * empty attribute value, a body that is not valid UTF-8 or holds characters SQS rejects, a
 * destination that is neither a queue URL nor a queue name. Not retriable.
 */
export class SqsInvalidMessageError extends JustonceError {
  constructor(message: string, details: Record<string, unknown>) {
    super('SQS_INVALID_MESSAGE', message, { retriable: false, details });
  }
}
