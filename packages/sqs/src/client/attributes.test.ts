import { attributeNameProblem, fromMessageAttributes, toMessageAttributes } from './attributes';

describe('message attributes', () => {
  it.each(['message-id', 'traceparent', 'x_y.z', 'a'.repeat(256)])(
    'accepts the name %s',
    (name) => {
      expect(attributeNameProblem(name)).toBeUndefined();
    },
  );

  it.each([
    ['', /1-256/],
    ['a'.repeat(257), /1-256/],
    ['has space', /A-Z/],
    ['.lead', /period/],
    ['trail.', /period/],
    ['a..b', /period/],
    ['AWS.trace', /reserved/],
    ['amazon.x', /reserved/],
  ])('refuses the name %j', (name, problem) => {
    expect(attributeNameProblem(name)).toMatch(problem);
  });

  it('writes headers as String attributes and reads String and Number ones back, not Binary', () => {
    expect(toMessageAttributes({ a: '1' })).toEqual({
      a: { DataType: 'String', StringValue: '1' },
    });
    expect(
      fromMessageAttributes({
        s: { DataType: 'String', StringValue: 'x' },
        n: { DataType: 'Number', StringValue: '42' },
        j: { DataType: 'String.json', StringValue: '{}' },
        b: { DataType: 'Binary', BinaryValue: new Uint8Array([1]) },
      }),
    ).toEqual({ s: 'x', n: '42', j: '{}' });
    expect(fromMessageAttributes(undefined)).toEqual({});
  });
});
