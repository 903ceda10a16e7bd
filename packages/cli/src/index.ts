/**
 * @justonce/cli — the `justonce` command line for the on-call engineer.
 *
 * @packageDocumentation
 */
export { run } from './run';
export { buildProgram } from './program';
export { UsageError, isUsageError } from './usage-error';
export { EXIT_OK, EXIT_FAILED, EXIT_USAGE } from './exit-codes';
