/** Test kit for users' own tests: in-memory transport and harness. */
export {};
