export { fullJitterBackoff } from './backoff';
export type { BackoffOptions } from './backoff';
