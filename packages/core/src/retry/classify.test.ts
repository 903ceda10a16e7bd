import { ConfigurationError, JustonceError } from '../errors';
import { classifyError, isTimeoutError } from './classify';
import { AttemptTimeoutError } from './errors';
import { markNonRetriable, markRetriable, markThrottling, readRetryMark } from './marks';

function withProps(props: Record<string, unknown>, message = 'failure'): Error {
  return Object.assign(new Error(message), props);
}

function named(name: string): Error {
  const error = new Error(name);
  error.name = name;
  return error;
}

describe('classifyError', () => {
  it.each([
    [408, 'transient'],
    [429, 'throttling'],
    [500, 'transient'],
    [502, 'transient'],
    [503, 'throttling'],
    [504, 'transient'],
    [509, 'throttling'],
    [400, 'non-retriable'],
    [401, 'non-retriable'],
    [403, 'non-retriable'],
    [404, 'non-retriable'],
    [409, 'non-retriable'],
    [501, 'non-retriable'],
  ])('HTTP status %i is %s', (status, expected) => {
    expect(classifyError(withProps({ statusCode: status }))).toBe(expected);
    expect(classifyError(withProps({ status }))).toBe(expected);
    expect(classifyError(withProps({ $metadata: { httpStatusCode: status } }))).toBe(expected);
  });

  it('ignores statuses that are not errors', () => {
    expect(classifyError(withProps({ status: 200 }), { defaultClass: 'non-retriable' })).toBe(
      'non-retriable',
    );
  });

  it.each([
    'ThrottlingException',
    'Throttling',
    'TooManyRequestsException',
    'ProvisionedThroughputExceededException',
    'RequestLimitExceeded',
    'SlowDown',
    'RequestThrottled',
  ])('the name %s is throttling, even on a 400', (name) => {
    const error = Object.assign(named(name), { $metadata: { httpStatusCode: 400 } });
    expect(classifyError(error)).toBe('throttling');
  });

  it.each(['RequestTimeout', 'RequestTimeoutException', 'TimeoutError'])(
    'the name %s is transient',
    (name) => {
      expect(classifyError(named(name), { defaultClass: 'non-retriable' })).toBe('transient');
    },
  );

  it.each(['ECONNRESET', 'ETIMEDOUT', 'ECONNREFUSED', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND'])(
    'the network code %s is transient',
    (code) => {
      expect(classifyError(withProps({ code }), { defaultClass: 'non-retriable' })).toBe(
        'transient',
      );
    },
  );

  it.each([
    ['40001', 'transient'],
    ['40P01', 'transient'],
    ['08006', 'transient'],
    ['57P01', 'transient'],
    ['53300', 'throttling'],
    ['23505', 'non-retriable'],
    ['42P01', 'non-retriable'],
    ['22001', 'non-retriable'],
  ])('the PostgreSQL SQLSTATE %s is %s', (code, expected) => {
    expect(classifyError(withProps({ code, severity: 'ERROR' }))).toBe(expected);
  });

  it.each([
    ['ER_DUP_ENTRY', '23000', 'non-retriable'],
    ['ER_DATA_TOO_LONG', '22001', 'non-retriable'],
    ['ER_PARSE_ERROR', '42000', 'non-retriable'],
    ['ER_LOCK_DEADLOCK', '40001', 'transient'],
    ['ER_LOCK_WAIT_TIMEOUT', 'HY000', 'transient'],
  ])('the MySQL error %s (SQLSTATE %s) is %s', (code, sqlState, expected) => {
    expect(
      classifyError(withProps({ code, errno: 1, sqlState }), { defaultClass: 'throttling' }),
    ).toBe(expected);
  });

  it('leaves unknown SQLSTATEs to the default', () => {
    expect(classifyError(withProps({ code: '2BP01' }), { defaultClass: 'non-retriable' })).toBe(
      'non-retriable',
    );
    expect(classifyError(withProps({ code: '2BP01' }))).toBe('transient');
  });

  it('follows a justonce error’s retriable flag', () => {
    expect(classifyError(new ConfigurationError('bad'))).toBe('non-retriable');
    expect(classifyError(new JustonceError('X', 'x', { retriable: true }))).toBe('transient');
    expect(classifyError(new AttemptTimeoutError(1, 10))).toBe('transient');
  });

  it('reads the AWS SDK v3 $retryable trait before the HTTP status', () => {
    const throttled = withProps({
      name: 'SomeServiceError',
      $retryable: { throttling: true },
      $metadata: { httpStatusCode: 400 },
    });
    expect(classifyError(throttled)).toBe('throttling');
    expect(classifyError(withProps({ $retryable: {}, $metadata: { httpStatusCode: 400 } }))).toBe(
      'transient',
    );
  });

  it('ignores a $retriable property: the SDK spells its trait $retryable', () => {
    expect(classifyError(withProps({ $retriable: {} }), { defaultClass: 'non-retriable' })).toBe(
      'non-retriable',
    );
  });

  it('reads boolean retryable / retriable properties before the HTTP status', () => {
    expect(classifyError(withProps({ retryable: true, status: 400 }))).toBe('transient');
    expect(classifyError(withProps({ retryable: false, status: 503 }))).toBe('non-retriable');
    expect(classifyError(withProps({ retriable: false, code: 'ECONNRESET' }))).toBe(
      'non-retriable',
    );
    expect(classifyError(withProps({ retriable: true, status: 400 }))).toBe('transient');
  });

  it('lets a caller mark override the built-in rules', () => {
    expect(classifyError(markNonRetriable(withProps({ statusCode: 503 })))).toBe('non-retriable');
    expect(classifyError(markRetriable(withProps({ statusCode: 400 })))).toBe('transient');
    expect(classifyError(markThrottling(new Error('busy')))).toBe('throttling');
    expect(classifyError(markRetriable(new ConfigurationError('x'), 'throttling'))).toBe(
      'throttling',
    );
  });

  it('keeps marks out of enumerable properties and returns the same error', () => {
    const error = new Error('x');
    expect(markNonRetriable(error)).toBe(error);
    expect(Object.keys(error)).toEqual([]);
    expect(JSON.stringify(error)).toBe('{}');
    expect(readRetryMark(error)).toBe('non-retriable');
    expect(readRetryMark(new Error('y'))).toBeUndefined();
    expect(readRetryMark('not an object')).toBeUndefined();
  });

  it('runs the caller’s classifier first and falls through on undefined', () => {
    const classify = (error: unknown) =>
      error instanceof RangeError ? ('non-retriable' as const) : undefined;
    expect(classifyError(markRetriable(new RangeError('x')), { classify })).toBe('non-retriable');
    expect(classifyError(withProps({ statusCode: 429 }), { classify })).toBe('throttling');
  });

  it('looks through causes: fetch reports a refused connection as a TypeError', () => {
    const fetchFailure = new TypeError('fetch failed', {
      cause: withProps({ code: 'ECONNREFUSED' }),
    });
    expect(classifyError(fetchFailure, { defaultClass: 'non-retriable' })).toBe('transient');
  });

  it('stops at the outermost decisive rule', () => {
    const wrapped = new JustonceError('WRAP', 'wrapped', {
      retriable: false,
      cause: withProps({ code: 'ECONNRESET' }),
    });
    expect(classifyError(wrapped)).toBe('non-retriable');
  });

  it('treats an abort as non-retriable', () => {
    expect(classifyError(named('AbortError'))).toBe('non-retriable');
  });

  it('uses the default for unknown errors and non-errors', () => {
    expect(classifyError(new Error('mystery'))).toBe('transient');
    expect(classifyError(new Error('mystery'), { defaultClass: 'non-retriable' })).toBe(
      'non-retriable',
    );
    expect(classifyError('a string', { defaultClass: 'throttling' })).toBe('throttling');
    expect(classifyError(undefined)).toBe('transient');
  });
});

describe('isTimeoutError', () => {
  it.each([
    ['an attempt timeout', new AttemptTimeoutError(1, 5)],
    ['ETIMEDOUT', withProps({ code: 'ETIMEDOUT' })],
    ['a TimeoutError', named('TimeoutError')],
    ['RequestTimeout', named('RequestTimeout')],
    ['a PostgreSQL statement timeout', withProps({ code: '57014' })],
    ['HTTP 408', withProps({ statusCode: 408 })],
    ['HTTP 504', withProps({ $metadata: { httpStatusCode: 504 } })],
    ['a timeout as cause', new Error('outer', { cause: withProps({ code: 'ETIMEDOUT' }) })],
  ])('recognises %s', (_label, error) => {
    expect(isTimeoutError(error)).toBe(true);
  });

  it.each([
    ['ECONNRESET', withProps({ code: 'ECONNRESET' })],
    ['HTTP 503', withProps({ statusCode: 503 })],
    ['a plain error', new Error('x')],
    ['a non-error', 42],
  ])('does not count %s', (_label, error) => {
    expect(isTimeoutError(error)).toBe(false);
  });
});
