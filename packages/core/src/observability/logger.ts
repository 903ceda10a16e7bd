import { ConfigurationError } from '../errors/configuration-error';

/** Structured fields attached to a log line. Payloads never go here unless the user opts in. */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * The logger justonce writes to: message first, then fields, as winston and `console` take
 * them. pino and bunyan take the fields first; wrap them (`warn: (m, f) => log.warn(f ?? {}, m)`).
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Whether `value` has the four methods of a {@link Logger}. @internal */
export function isLogger(value: unknown): value is Logger {
  const l = value as Partial<Record<keyof Logger, unknown>> | null;
  return (
    typeof l === 'object' &&
    l !== null &&
    ['debug', 'info', 'warn', 'error'].every((m) => typeof l[m as keyof Logger] === 'function')
  );
}

/**
 * The `logger` option: {@link silentLogger} when absent, else `value` if it has the four
 * methods of a {@link Logger}; anything else is a {@link ConfigurationError}. For transports,
 * so that every package checks a logger alike.
 */
export function resolveLogger(value: unknown): Logger {
  if (value === undefined) return silentLogger;
  if (!isLogger(value)) {
    throw new ConfigurationError('logger must have debug, info, warn and error methods');
  }
  return value;
}

/** A logger that drops everything; the default. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A logger writing one JSON line per entry to stderr, from `minLevel` up. */
export function consoleLogger(minLevel: Level = 'info'): Logger {
  const write = (level: Level) => (message: string, fields?: LogFields) => {
    if (ORDER[level] < ORDER[minLevel]) return;
    process.stderr.write(
      `${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields })}\n`,
    );
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
