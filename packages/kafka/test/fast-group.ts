/**
 * Group settings that make rebalances quick on a small machine. A module of its own so the
 * crash-test child processes can use it without loading the test support's store helpers.
 */
export const FAST_GROUP = {
  sessionTimeout: 6000,
  rebalanceTimeout: 8000,
  heartbeatInterval: 500,
  maxWaitTimeInMs: 200,
} as const;
