import { html, type Html } from './html';

/** How a message body is shown. */
export interface ShownBody {
  /** `json` pretty-printed, `text` as UTF-8, `hex` a dump of bytes that are not UTF-8. */
  readonly kind: 'json' | 'text' | 'hex';
  readonly text: string;
  /** Size in bytes (UTF-8 for string bodies). */
  readonly bytes: number;
}

/** Bodies larger than this are cut for display. */
const MAX_SHOWN_BYTES = 256 * 1024;

function prettyJson(text: string): string | undefined {
  const trimmed = text.trim();
  if (!/^[[{"]/.test(trimmed)) return undefined;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return undefined;
  }
}

/** `00000000  7b 22 61 22  …  {"a"` lines, 16 bytes each. */
function hexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let offset = 0; offset < bytes.length; offset += 16) {
    const row = bytes.subarray(offset, offset + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.'));
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii.join('')}`);
  }
  return lines.join('\n');
}

/**
 * The body as text to show: pretty JSON when it is JSON, the text when it is UTF-8, a hex
 * dump otherwise. The caller escapes it like any other text.
 */
export function showBody(body: Uint8Array | string): ShownBody {
  if (typeof body === 'string') {
    const bytes = Buffer.byteLength(body, 'utf8');
    const text = body.length > MAX_SHOWN_BYTES ? `${body.slice(0, MAX_SHOWN_BYTES)}\n…` : body;
    const json = prettyJson(body);
    return json === undefined ? { kind: 'text', text, bytes } : { kind: 'json', text: json, bytes };
  }
  const cut = body.length > MAX_SHOWN_BYTES ? body.subarray(0, MAX_SHOWN_BYTES) : body;
  const more = cut.length < body.length ? '\n…' : '';
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(cut);
  } catch {
    return { kind: 'hex', text: hexDump(cut) + more, bytes: body.length };
  }
  const json = more === '' ? prettyJson(text) : undefined;
  return json === undefined
    ? { kind: 'text', text: text + more, bytes: body.length }
    : { kind: 'json', text: json, bytes: body.length };
}

/** A message body shown as text (escaped): pretty JSON, UTF-8 text or a hex dump. */
export function bodyBlock(body: Uint8Array | string): Html {
  const shown = showBody(body);
  return html`<p class="muted">
      ${shown.kind === 'json' ? 'JSON' : shown.kind === 'text' ? 'UTF-8 text' : 'bytes (hex)'},
      ${shown.bytes} bytes
    </p>
    <pre id="body" data-kind="${shown.kind}">${shown.text}</pre>`;
}
