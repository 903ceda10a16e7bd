/**
 * What a browser would not show: the control characters (Unicode's Cc, U+0000–U+001F but tab
 * and newline, U+007F–U+009F) and UTF-16 surrogates without their pair. A browser drops or
 * replaces them, so an operator could not see why a letter was refused.
 */
const INVISIBLE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` with every invisible character written as its JSON escape, `\u0000`: the form the
 * store's text columns use for U+0000. Tab and newline stay as they are.
 */
export function visibleText(text: string): string {
  return text.replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
