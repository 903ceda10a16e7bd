export { StoreTimeoutError, isStoreTimeoutError } from './store-timeout-error';
export type { StoreTimeoutLimit } from './store-timeout-error';
export { isConnectionLoss } from './connection-loss';
