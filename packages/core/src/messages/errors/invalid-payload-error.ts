import { JustonceError } from '../../errors/justonce-error';
import { storableDiagnostic } from '../../common/text';
import { describeIssues, type PayloadIssue } from '../issues';

/** How a message type is named in error messages: quoted, storable, never very long. @internal */
export function shownType(type: string): string {
  const text = storableDiagnostic(type);
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

/**
 * A typed message's payload is unusable: its body is not JSON (or not UTF-8), or it fails the
 * message type's schema. Retrying cannot help (`retriable` false): in an inbox handler the
 * message is dead-lettered at once with reason `INVALID_PAYLOAD`, the issues in the letter's
 * error message. `outbox.add` reports a payload that fails its schema as an
 * `InvalidEventError` with this error as `cause`.
 *
 * `issues` holds the validator's issues as plain `{ message, path }` data (at most 100).
 * Validators' messages may quote the value they refused (valibot does); they reach logs and
 * dead letters like any error message.
 */
export class InvalidPayloadError extends JustonceError {
  /** Dead-letter reason the inbox records for this error. */
  readonly deadLetterReason = 'INVALID_PAYLOAD' as const;
  /** The message type whose payload was refused. */
  readonly messageType: string;
  /** What the validator found, as plain data. */
  readonly issues: readonly PayloadIssue[];

  /**
   * @param messageType - the `type` of the message whose payload was refused
   * @param issues - the problems, as {@link plainIssues} made them
   * @param options - `total`: issues the validator reported, when `issues` was cut; `cause`
   */
  constructor(
    messageType: string,
    issues: readonly PayloadIssue[],
    options: { readonly total?: number; readonly cause?: unknown } = {},
  ) {
    const total = Math.max(options.total ?? issues.length, issues.length);
    super(
      'INVALID_PAYLOAD',
      `the payload of message type ${shownType(messageType)} is invalid: ${describeIssues(issues, total)}`,
      {
        retriable: false,
        cause: options.cause,
        details: { messageType: storableDiagnostic(messageType), issueCount: total },
      },
    );
    this.messageType = messageType;
    this.issues = issues;
  }
}
