import { GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { isQueueUrl } from '../client/queue-names';
import { timeLimited } from '../client/time-limits';
import type { PublisherRuntime } from './runtime';

/**
 * The URL of a destination: a queue URL as is, a queue name looked up with `GetQueueUrl`
 * once and cached (a failed lookup is not cached, so the next call tries again). @internal
 */
export function queueUrlOf(rt: PublisherRuntime, destination: string): Promise<string> {
  if (isQueueUrl(destination)) return Promise.resolve(destination);
  const cached = rt.urls.get(destination);
  if (cached) return cached;
  const lookup = timeLimited('GetQueueUrl', rt.settings.timeouts.requestMs, (signal) =>
    rt.client.send(new GetQueueUrlCommand({ QueueName: destination }), { abortSignal: signal }),
  ).then(({ QueueUrl }) => {
    if (!QueueUrl) throw new Error('GetQueueUrl returned no URL');
    return QueueUrl;
  });
  rt.urls.set(destination, lookup);
  lookup.catch(() => rt.urls.delete(destination));
  return lookup;
}
