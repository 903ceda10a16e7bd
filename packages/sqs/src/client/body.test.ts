import { decodeBody, encodeBody } from './body';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('message body encoding', () => {
  it('sends valid UTF-8 as text', () => {
    expect(encodeBody(bytes('{"a":"ü😀"}\n'), 'utf8')).toEqual({ ok: true, body: '{"a":"ü😀"}\n' });
  });

  it('refuses invalid UTF-8, characters SQS rejects and an empty body', () => {
    expect(encodeBody(new Uint8Array([0xff, 0xfe]), 'utf8')).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/not valid UTF-8/),
    });
    expect(encodeBody(bytes('a\u0001b'), 'utf8')).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/U\+0001/),
    });
    expect(encodeBody(new Uint8Array(), 'base64')).toMatchObject({ ok: false });
  });

  it('round-trips any bytes through base64', () => {
    const payload = new Uint8Array([0, 1, 0xff, 0xfe]);
    const encoded = encodeBody(payload, 'base64');
    if (!encoded.ok) throw new Error(encoded.problem);
    expect(decodeBody(encoded.body, { 'body-encoding': 'base64' })).toEqual(Buffer.from(payload));
    expect(decodeBody(encoded.body, {})).toBe(encoded.body);
  });
});
