import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ConfigurationError } from '../errors/configuration-error';
import { InvalidPayloadError, shownType } from './errors/invalid-payload-error';
import { plainIssues } from './issues';
import type { MessageType } from './message-type';

/** A payload that passed its schema (with the schema's output), or the error refusing it. */
export type Validation<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: InvalidPayloadError };

/**
 * Runs the message type's schema on `value`, whether its `validate` answers at once or with a
 * promise (an async refinement). A failure comes back as an {@link InvalidPayloadError}, not
 * thrown; whatever the validator itself throws (an async refinement's lookup failing) is
 * thrown unchanged, so that a transient failure stays retriable. @internal
 */
export async function validatePayload<S extends StandardSchemaV1>(
  message: MessageType<S>,
  value: unknown,
): Promise<Validation<StandardSchemaV1.InferOutput<S>>> {
  const result: unknown = await message.schema['~standard'].validate(value);
  if (typeof result !== 'object' || result === null) {
    throw new ConfigurationError(
      `the schema of message type ${shownType(message.type)} answered validate() with ${result === null ? 'null' : typeof result}, not a Standard Schema result`,
    );
  }
  const { issues } = result as { issues?: readonly StandardSchemaV1.Issue[] };
  if (issues) {
    const total = Array.isArray(issues) ? issues.length : 0;
    return {
      ok: false,
      error: new InvalidPayloadError(message.type, plainIssues(issues), { total }),
    };
  }
  return {
    ok: true,
    value: (result as StandardSchemaV1.SuccessResult<StandardSchemaV1.InferOutput<S>>).value,
  };
}
