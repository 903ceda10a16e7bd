import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Logger } from '@justonce/core';
import { clientError, PROBLEM_CONTENT_TYPE, problemBody, requestFailed } from './problem';
import type { HeldResponse } from './response';

/**
 * The answer to an error the application's framework would otherwise answer itself (with
 * Express's HTML stack trace page, or Fastify's message): a problem that tells nothing of
 * the error. An error that carries a 4xx status of its own (`statusCode` or `status`, as
 * Fastify's, `http-errors`' and `body-parser`'s do) gets that status, unless it says
 * `expose: false`; anything else gets 500 `requestFailed`, whose `instance` is logged with
 * the error (`logger.error`). `fields` add to the log line (the operation name; never the
 * key).
 */
export function errorResponse(
  error: unknown,
  logger: Logger,
  fields: Readonly<Record<string, unknown>>,
): HeldResponse {
  const status = clientStatus(error);
  if (status !== undefined) {
    logger.info('a request was refused with the status of the error it threw', {
      ...fields,
      status,
      error,
    });
    return problemResponse(
      problemBody(clientError(status, STATUS_CODES[status] ?? 'Error')),
      status,
    );
  }
  const instance = `urn:uuid:${randomUUID()}`;
  logger.error('a request failed; answered 500', { ...fields, instance, error });
  return problemResponse(problemBody(requestFailed(instance)), 500);
}

/** The 4xx an error names for itself, or `undefined`. */
function clientStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { statusCode, status, expose } = error as Record<string, unknown>;
  if (expose === false) return undefined;
  const named = typeof statusCode === 'number' ? statusCode : status;
  return typeof named === 'number' && Number.isInteger(named) && named >= 400 && named < 500
    ? named
    : undefined;
}

function problemResponse(body: Uint8Array, status: number): HeldResponse {
  return { status, headers: [['content-type', PROBLEM_CONTENT_TYPE]], body };
}
