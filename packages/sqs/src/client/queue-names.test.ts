import { isFifoQueue, isQueueName, isQueueUrl, parseQueueArn, queueNameOfUrl } from './queue-names';

describe('queue names', () => {
  it('tells queue URLs, names and FIFO queues apart', () => {
    const url = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo';
    expect(isQueueUrl(url)).toBe(true);
    expect(queueNameOfUrl(url)).toBe('orders.fifo');
    expect(isFifoQueue(url)).toBe(true);
    expect(isFifoQueue('orders')).toBe(false);
    expect(isQueueUrl('orders')).toBe(false);
    expect(isQueueUrl('ftp://host/000/orders')).toBe(false);
    expect(isQueueName('orders-1_a')).toBe(true);
    expect(isQueueName('a'.repeat(81))).toBe(false);
    expect(isQueueName('has space')).toBe(false);
    expect(isQueueName('x.fifo.fifo')).toBe(false);
  });

  it('answers the same for a URL asked about again, valid or not', () => {
    const url = 'http://127.0.0.1:9324/000000000000/jobs';
    for (let i = 0; i < 3; i += 1) {
      expect(queueNameOfUrl(url)).toBe('jobs');
      expect(queueNameOfUrl('not a url')).toBeUndefined();
      expect(queueNameOfUrl('https://host/000/bad name')).toBeUndefined();
    }
    // Past the cache's bound, answers stay right.
    for (let i = 0; i < 1_500; i += 1) {
      expect(queueNameOfUrl(`https://host/000/q${i}`)).toBe(`q${i}`);
    }
    expect(queueNameOfUrl(url)).toBe('jobs');
  });

  it('reads account and name from a queue ARN', () => {
    expect(parseQueueArn('arn:aws:sqs:us-east-1:000000000000:jobs-dlq')).toEqual({
      account: '000000000000',
      name: 'jobs-dlq',
    });
    expect(parseQueueArn('arn:aws:sns:us-east-1:0:topic')).toBeUndefined();
  });
});
