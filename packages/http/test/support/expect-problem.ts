import { PROBLEM_TYPES } from '@justonce/http';
import type { Received } from './client';

/** Asserts an RFC 9457 problem response of `status` and `type`. */
export function expectProblem(
  response: Received,
  status: number,
  type: keyof typeof PROBLEM_TYPES,
): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(response.headers.get('idempotent-replayed')).toBeNull();
  expect(response.json).toEqual({
    type: PROBLEM_TYPES[type],
    title: expect.any(String),
    status,
    detail: expect.any(String),
  });
}
