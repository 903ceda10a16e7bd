import { fingerprint } from './fingerprint';

// Fingerprints are stored as request hashes and compared with later deliveries' ones, so
// the encoding must not change under a given version: these values pin it.
describe('fingerprint', () => {
  const body = Buffer.from('{"orderId":"o-1"}');

  it('keeps its value for a body and no named headers', () => {
    expect(fingerprint(body, {}, [])).toBe(
      'fd88336c32a74243c3e5670bf96ba8d3730b92db1bdbfbd3f7f0872348dbd973',
    );
  });

  it('keeps its value with named headers, present and absent', () => {
    const headers = { 'Content-Type': 'application/json', 'x-other': '1' };
    expect(fingerprint(body, headers, ['content-type', 'x-absent'])).toBe(
      'f889909af931e40b616ca27ce63a9ad36e9992fed4fb2c2982b90b724904c40f',
    );
  });

  it('keeps its value for an empty body', () => {
    expect(fingerprint(new Uint8Array(0), {}, [])).toBe(
      '3382de520bc2173877131554aaa704207c0880d010992c4b662c5e4238ae71ec',
    );
  });

  it('tells apart a header part and a body that would concatenate to the same bytes', () => {
    const a = fingerprint(Buffer.from('"]]x'), { h: 'v' }, ['h']);
    const b = fingerprint(Buffer.from('x'), { h: 'v"]]' }, ['h']);
    expect(a).not.toBe(b);
  });
});
