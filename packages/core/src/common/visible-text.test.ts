import { visibleText } from './text';

describe('visibleText', () => {
  it('writes control characters and lone surrogates as \\u escapes', () => {
    expect(visibleText('a\u0000b\u0001\u001f\u007f\u0085\u009f')).toBe(
      'a\\u0000b\\u0001\\u001f\\u007f\\u0085\\u009f',
    );
    expect(visibleText('line\r\n')).toBe('line\\u000d\n');
    expect(visibleText('\ud800x\udc00')).toBe('\\ud800x\\udc00');
    expect(visibleText('\udc00\ud800')).toBe('\\udc00\\ud800');
  });

  it('leaves tab, newline, pairs and other text as they are', () => {
    for (const text of [
      'tab\there\nnext',
      'emoji 😀 \ud83d\ude00',
      'é ü ß 中 \u00a0',
      '\\u0000',
      '',
    ]) {
      expect(visibleText(text)).toBe(text);
    }
  });
});
