/**
 * The `send` span of each message the relay publishes (kind PRODUCER, by the messaging
 * conventions). The relay runs outside any request, so each span's parent is the creation
 * context its event carries (the `create` span of `outbox.add`, from the stored
 * `traceparent`), with a link to it as the conventions ask of a send: the trace runs on from
 * the request that added the event. The message goes out with its headers unchanged, so
 * consumers continue from the creation context too.
 */
import { ROOT_CONTEXT, type Span } from '@opentelemetry/api';
import {
  carriedContext,
  failSpan,
  headerLookup,
  linksTo,
  startMessagingSpan,
} from '../observability/tracing';
import type { OutgoingMessage, Publisher, PublishResult } from '../transport/publisher';

function startSend(system: string | undefined, message: OutgoingMessage): Span {
  const carried = carriedContext(headerLookup(message.headers));
  const span = startMessagingSpan('send', message.destination, {
    ...(system === undefined ? {} : { system }),
    operationName: 'publish',
    parent: carried ?? ROOT_CONTEXT,
    ...(carried === undefined ? {} : { links: linksTo(carried) }),
  });
  if (span.isRecording()) span.setAttribute('messaging.message.id', message.messageId);
  return span;
}

/**
 * Runs `publish` (the publisher's call on `messages`, with its time limit) inside one `send`
 * span per message; each span ends with its message's result: a failure is recorded on it
 * (and `justonce.relay.outage` says whether it was the broker's), a rejected call fails
 * every span. @internal
 */
export async function publishSent(
  publisher: Publisher,
  messages: readonly OutgoingMessage[],
  publish: () => Promise<PublishResult[]>,
): Promise<PublishResult[]> {
  const spans = messages.map((m) => startSend(publisher.messagingSystem, m));
  try {
    const results = await publish();
    results.forEach((result, i) => {
      const span = spans[i];
      if (span === undefined || result.ok) return;
      failSpan(span, result.error);
      if (span.isRecording()) span.setAttribute('justonce.relay.outage', result.outage === true);
    });
    return results;
  } catch (error) {
    for (const span of spans) failSpan(span, error);
    throw error;
  } finally {
    for (const span of spans) span.end();
  }
}
