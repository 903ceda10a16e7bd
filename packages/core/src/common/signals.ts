/** A signal that never aborts: the default where a caller passes none, so code need not branch. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;
