import { ConfigurationError } from '@justonce/core';
import type { Admin } from '@justonce/core/admin';
import type { DashboardOptions } from './types';

/** {@link DashboardOptions} checked, with defaults applied. */
export interface ResolvedDashboardOptions {
  readonly admin: Admin;
  readonly token: string | undefined;
  readonly basePath: string;
  readonly sampleEveryMs: number;
  readonly title: string;
  readonly slotLagWarningBytes: number;
}

/** The keys of {@link DashboardOptions}. */
export const DASHBOARD_OPTION_KEYS = [
  'admin',
  'token',
  'basePath',
  'sampleEveryMs',
  'title',
  'slotLagWarningBytes',
] as const;
/** 1 GiB: past it a slot's lag is drawn as a warning, unless told otherwise. */
const DEFAULT_SLOT_LAG_WARNING_BYTES = 1024 ** 3;
const MIN_TOKEN_LENGTH = 16;
const MIN_SAMPLE_MS = 100;
const MAX_SAMPLE_MS = 3_600_000;

/** Throws a {@link ConfigurationError} naming the option keys `allowed` does not list. */
export function rejectUnknownKeys(
  where: string,
  options: object,
  allowed: readonly string[],
): void {
  const unknown = Object.keys(options).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) {
    throw new ConfigurationError(
      `${where}: unknown option${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `\`${k}\``).join(', ')}; known: ${allowed.join(', ')}`,
      { unknown },
    );
  }
}

function isAdmin(value: unknown): value is Admin {
  if (typeof value !== 'object' || value === null) return false;
  const admin = value as Partial<Record<keyof Admin, unknown>>;
  return (
    typeof admin.status === 'function' &&
    typeof admin.redeliverDeadLetter === 'function' &&
    typeof admin.deadLetters === 'object' &&
    typeof admin.outbox === 'object' &&
    typeof admin.operations === 'object'
  );
}

/** `'/ops/'` → `'/ops'`, `'/'` → `''`; refuses what is not a plain path. */
function basePathOption(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*\/?$/.test(value)) {
    throw new ConfigurationError(
      "createDashboard: `basePath` must be a path starting with '/', such as '/ops'",
      { basePath: typeof value === 'string' ? value : typeof value },
    );
  }
  return value.replace(/\/+$/, '');
}

/** `slotLagWarningBytes`: a positive whole number of bytes. */
function slotLagWarningOption(value: unknown): number {
  if (value === undefined) return DEFAULT_SLOT_LAG_WARNING_BYTES;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(
      'createDashboard: `slotLagWarningBytes` must be a positive whole number of bytes',
      { slotLagWarningBytes: value },
    );
  }
  return value;
}

/** Checks `options` (a value from anywhere: plain JavaScript callers included). */
export function resolveDashboardOptions(options: DashboardOptions): ResolvedDashboardOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('createDashboard: options must be an object with `admin`');
  }
  rejectUnknownKeys('createDashboard', options, DASHBOARD_OPTION_KEYS);
  if (!isAdmin(options.admin)) {
    throw new ConfigurationError('createDashboard: `admin` must come from createAdmin(store)');
  }
  const { token, sampleEveryMs = 30_000, title = 'justonce' } = options;
  if (token !== undefined && (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH)) {
    throw new ConfigurationError(
      `createDashboard: \`token\` must be a string of at least ${MIN_TOKEN_LENGTH} characters`,
    );
  }
  if (
    typeof sampleEveryMs !== 'number' ||
    !Number.isInteger(sampleEveryMs) ||
    sampleEveryMs < MIN_SAMPLE_MS ||
    sampleEveryMs > MAX_SAMPLE_MS
  ) {
    throw new ConfigurationError(
      `createDashboard: \`sampleEveryMs\` must be an integer from ${MIN_SAMPLE_MS} to ${MAX_SAMPLE_MS}`,
      { sampleEveryMs },
    );
  }
  if (typeof title !== 'string' || title.trim() === '' || title.length > 200) {
    throw new ConfigurationError('createDashboard: `title` must be a non-empty string');
  }
  return {
    admin: options.admin,
    token,
    basePath: basePathOption(options.basePath),
    sampleEveryMs,
    title,
    slotLagWarningBytes: slotLagWarningOption(options.slotLagWarningBytes),
  };
}
