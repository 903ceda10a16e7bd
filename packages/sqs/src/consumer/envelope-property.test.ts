import fc from 'fast-check';
import { fromMessageAttributes } from '../client/attributes';
import { toEnvelope } from './envelope';
import {
  RUNS,
  QUEUE_URL,
  anyText,
  messageAttributes,
  message,
  settings,
  build,
  own,
  expectedHeaders,
  idAttribute,
  expectedId,
  expectedReceiveCount,
} from '../../test/envelope-arbitraries';

describe('toEnvelope (property)', () => {
  it('never throws, and maps every message to an envelope by the documented rules', () => {
    fc.assert(
      fc.property(message, settings, (m, s) => {
        const { settings: envelopeSettings, extractErrors } = build(s);
        const envelope = toEnvelope(m, envelopeSettings);
        const headers = expectedHeaders(m.MessageAttributes);

        // Headers: exactly the String/Number attributes, values unchanged, own properties.
        expect(Object.keys(envelope.headers).sort()).toEqual([...headers.keys()].sort());
        for (const [key, value] of headers) expect(own(envelope.headers, key)).toBe(value);

        expect(envelope.id).toBe(expectedId(m, headers, s));
        // `extract` runs only when the attribute gives no id; its throw is reported once.
        const fromAttribute = idAttribute(headers, s.header);
        const extractRan = fromAttribute === undefined || fromAttribute === '';
        expect(extractErrors).toHaveLength(s.extract.kind === 'throws' && extractRan ? 1 : 0);

        const scope = headers.get(s.scopeHeader);
        if (scope !== undefined && scope !== '') expect(envelope.scope).toBe(scope);
        else expect(envelope).not.toHaveProperty('scope');

        const group = own(m.Attributes, 'MessageGroupId');
        if (typeof group === 'string') expect(envelope.key).toBe(group);
        else expect(envelope).not.toHaveProperty('key');

        const rawBody: unknown = m.Body;
        if (headers.get('body-encoding') === 'base64' && typeof rawBody === 'string') {
          expect(envelope.body).toBeInstanceOf(Uint8Array);
          expect(Buffer.from(envelope.body as Uint8Array)).toEqual(Buffer.from(rawBody, 'base64'));
        } else if (headers.get('body-encoding') === 'base64' && rawBody == null) {
          expect(envelope.body).toEqual(Buffer.alloc(0));
        } else {
          // A string body is handed over as is; a missing one as ''; anything else unchanged,
          // for the inbox to dead-letter as INVALID_BODY.
          expect(envelope.body).toBe(rawBody ?? '');
        }

        expect(envelope.delivery.source).toBe(QUEUE_URL);
        expect(envelope.delivery.receivedAt).toBeInstanceOf(Date);
        const count = expectedReceiveCount(m);
        if (count === undefined) expect(envelope.delivery).not.toHaveProperty('receiveCount');
        else expect(envelope.delivery.receiveCount).toBe(count);
      }),
      { numRuns: RUNS },
    );
  });

  it('a base64 body comes back as the exact bytes that were encoded', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        const envelope = toEnvelope(
          {
            MessageId: 'm',
            Body: Buffer.from(bytes).toString('base64'),
            MessageAttributes: { 'body-encoding': { DataType: 'String', StringValue: 'base64' } },
          },
          build({
            header: 'message-id',
            scopeHeader: 'tenant',
            fallback: true,
            extract: { kind: 'none' },
            loggerThrows: false,
          }).settings,
        );
        expect(Buffer.from(envelope.body as Uint8Array).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('distinct message-id attributes never map to one id (no message is taken for another)', () => {
    fc.assert(
      fc.property(anyText, anyText, (a, b) => {
        fc.pre(a !== b && a !== '' && b !== '');
        const s = build({
          header: 'message-id',
          scopeHeader: 'tenant',
          fallback: true,
          extract: { kind: 'none' },
          loggerThrows: false,
        }).settings;
        const of = (id: string) =>
          toEnvelope(
            {
              MessageId: 'same',
              MessageAttributes: { 'message-id': { DataType: 'String', StringValue: id } },
            },
            s,
          ).id;
        expect(of(a)).toBe(a);
        expect(of(b)).toBe(b);
      }),
      { numRuns: 1_000 },
    );
  });
});

describe('fromMessageAttributes (property)', () => {
  it('never throws and returns only string values', () => {
    fc.assert(
      fc.property(messageAttributes, (attributes) => {
        const headers = fromMessageAttributes(
          attributes as Parameters<typeof fromMessageAttributes>[0],
        );
        for (const key of Object.keys(headers)) expect(typeof headers[key]).toBe('string');
        expect(new Map(Object.entries(headers))).toEqual(expectedHeaders(attributes));
      }),
      { numRuns: RUNS },
    );
  });
});
