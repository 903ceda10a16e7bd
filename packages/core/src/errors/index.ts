export { JustonceError, isJustonceError, hasErrorCode } from './justonce-error';
export type { JustonceErrorOptions } from './justonce-error';
export { ConfigurationError } from './configuration-error';
export { StoreUnavailableError } from './store-unavailable-error';
export { errorChain } from './error-chain';
