import { Inject } from '@nestjs/common';

/** The injection token of the {@link JustonceModuleOptions} as given (or as the factory made them). */
export const JUSTONCE_MODULE_OPTIONS = 'justonce:module-options';

/** The injection token of the module's `Store` (see {@link InjectStore}). */
export const JUSTONCE_STORE = 'justonce:store';

/** The injection token of the module's `Outbox` (see {@link InjectOutbox}). */
export const JUSTONCE_OUTBOX = 'justonce:outbox';

/**
 * The injection token of the module's default `Operations`: created with the module's
 * `operations` settings and no default operation name, so each call names its operation.
 */
export const JUSTONCE_OPERATIONS = 'justonce:operations';

/**
 * The injection token of the `Operations` named `operation`, provided by
 * `JustonceModule.forFeature({ operations: [operation] })`; without a name, the module's
 * default `Operations` ({@link JUSTONCE_OPERATIONS}).
 */
export function getOperationsToken(operation?: string): string {
  return operation === undefined ? JUSTONCE_OPERATIONS : `${JUSTONCE_OPERATIONS}:${operation}`;
}

/** Injects the module's `Store`. */
export function InjectStore(): ParameterDecorator & PropertyDecorator {
  return Inject(JUSTONCE_STORE);
}

/** Injects the module's `Outbox`: `outbox.add(trx, OrderPlaced, payload)` in your transaction. */
export function InjectOutbox(): ParameterDecorator & PropertyDecorator {
  return Inject(JUSTONCE_OUTBOX);
}

/**
 * Injects `Operations`: with a name, the one `JustonceModule.forFeature({ operations: [name] })`
 * provides (its default operation is `name`); without, the module's default one.
 */
export function InjectOperations(operation?: string): ParameterDecorator & PropertyDecorator {
  return Inject(getOperationsToken(operation));
}
