import { isRetriableRequestError } from './request-errors';

describe('isRetriableRequestError', () => {
  const client = { $fault: 'client', $metadata: { httpStatusCode: 400 } };

  it("reads the AWS SDK's $retryable trait on a client fault", () => {
    expect(isRetriableRequestError({ ...client, name: 'Custom', $retryable: {} })).toBe(true);
    expect(
      isRetriableRequestError({ ...client, name: 'Custom', $retryable: { throttling: true } }),
    ).toBe(true);
    expect(isRetriableRequestError({ ...client, name: 'Custom', $retriable: {} })).toBe(false);
  });

  it('takes throttling, server faults and errors without service metadata as retriable', () => {
    expect(isRetriableRequestError({ ...client, name: 'ThrottlingException' })).toBe(true);
    expect(isRetriableRequestError({ $fault: 'server', $metadata: {} })).toBe(true);
    expect(isRetriableRequestError(new Error('socket hang up'))).toBe(true);
    expect(isRetriableRequestError({ ...client, name: 'InvalidParameterValue' })).toBe(false);
  });
});
