import { hasErrorCode } from '@justonce/core';
import { parseDestination } from './destination';

describe('parseDestination', () => {
  it('reads a bare name as a queue through the default exchange', () => {
    expect(parseDestination('orders')).toEqual({ exchange: '', routingKey: 'orders' });
    expect(parseDestination('/orders')).toEqual({ exchange: '', routingKey: 'orders' });
  });

  it('splits exchange/routingKey at the first slash', () => {
    expect(parseDestination('events/order.created')).toEqual({
      exchange: 'events',
      routingKey: 'order.created',
    });
    expect(parseDestination('events/a/b')).toEqual({ exchange: 'events', routingKey: 'a/b' });
    expect(parseDestination('fan/')).toEqual({ exchange: 'fan', routingKey: '' });
  });

  it.each([[''], ['/'], [`${'x'.repeat(256)}/k`], [`ex/${'k'.repeat(256)}`]])(
    'refuses %j with a typed, non-retriable error',
    (destination) => {
      let caught: unknown;
      try {
        parseDestination(destination);
      } catch (error) {
        caught = error;
      }
      expect(hasErrorCode(caught, 'RABBIT_INVALID_DESTINATION')).toBe(true);
      expect((caught as { retriable: boolean }).retriable).toBe(false);
    },
  );
});
