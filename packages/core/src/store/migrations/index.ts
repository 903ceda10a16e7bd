import type { Migration } from '../migration';
import { m001Init } from './001_init';
import { m002Idempotency } from './002_idempotency';

/**
 * Every migration, in order. Append only: a released migration is never edited, and a new
 * one takes the next number.
 */
export const migrations: readonly Migration[] = [m001Init, m002Idempotency];
