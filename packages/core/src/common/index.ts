/**
 * Core's ground floor: helpers for text, errors, time and signals that every layer (and every
 * transport, through `@justonce/core/transport`) shares. Imports nothing else of core.
 */
export { crashPoint } from './crash-points';
export { ERROR_TEXT_LIMIT, asError, errorMessage, errorText } from './errors';
export { NEVER_ABORTED } from './signals';
export {
  hasLoneSurrogate,
  isStorableText,
  jsonOf,
  storableDiagnostic,
  textOf,
  unstorableText,
  unwritableText,
  visibleText,
} from './text';
export { finishesWithin, sleep, withTimeout } from './time';
