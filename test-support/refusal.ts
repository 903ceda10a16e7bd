import { ConfigurationError } from '@justonce/core';

/** The {@link ConfigurationError} `run` throws; anything else thrown, or nothing, fails. */
export function refusal(run: () => unknown): ConfigurationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigurationError) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}
