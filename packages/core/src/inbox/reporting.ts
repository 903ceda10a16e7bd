import type { Logger } from '../observability/logger';
import type { Store } from '../store/store';
import type { Inbox } from './types';

/** Where an inbox's consumer may write what it reports about itself. @internal */
export interface InboxReporting {
  readonly store: Store;
  readonly logger: Logger;
}

// The `Inbox` interface is public and may be implemented by users, so the store behind
// `createInbox`'s inboxes is kept here rather than added to it.
const reporting = new WeakMap<object, InboxReporting>();

/** Records where `inbox` reports (`createInbox`, unless `activityFlushMs` is 0). @internal */
export function setInboxReporting(inbox: object, value: InboxReporting): void {
  reporting.set(inbox, value);
}

/**
 * Where `inbox` reports, or `undefined` for an inbox not built by `createInbox` or built with
 * `activityFlushMs: 0` (nothing is recorded then). @internal
 */
export function inboxReporting<Tx>(inbox: Inbox<Tx>): InboxReporting | undefined {
  return reporting.get(inbox);
}
