import { InvalidOperationInputError } from './errors/invalid-operation-input-error';
import type { OperationsRuntime } from './runtime';
import type { RecordKey } from './sql/row';
import type { OperationTarget } from './types';
import { MAX_NAME_LENGTH, nameInput } from './validate';

/**
 * The record a call works on: its key, with the call's operation and scope or the
 * instance's defaults, each validated. @internal
 */
export function target(
  rt: OperationsRuntime,
  key: unknown,
  given: OperationTarget | undefined,
): RecordKey {
  const { defaultOperation, defaultScope, maxKeyLength } = rt.options;
  const operation = given?.operation ?? defaultOperation;
  if (operation === undefined) {
    throw new InvalidOperationInputError(
      'no operation name: pass one to createOperations or to this call',
    );
  }
  return {
    scope: nameInput(given?.scope ?? defaultScope, 'scope', MAX_NAME_LENGTH),
    operation: nameInput(operation, 'operation', MAX_NAME_LENGTH),
    key: nameInput(key, 'key', maxKeyLength),
  };
}

/** Only the identifying fields of a ref, so a log line carries no more than those. @internal */
export function recordKeyOf(ref: RecordKey): RecordKey {
  return { scope: ref.scope, operation: ref.operation, key: ref.key };
}
