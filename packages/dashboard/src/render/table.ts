import { html, type Html } from './html';

/** A cell's content: text (escaped), markup, or a number. */
export type Cell = Html | string | number;

/** The muted row of an empty table, across `columns` columns when given. */
function emptyRow(text: string, columns?: number): Html {
  const cell =
    columns === undefined
      ? html`<td class="muted">${text}</td>`
      : html`<td colspan="${columns}" class="muted">${text}</td>`;
  return html`<tr>
    ${cell}
  </tr>`;
}

/** A table with a header row; `empty` (across every column) stands in for no rows. */
export function dataTable(options: {
  readonly id: string;
  readonly heads: readonly Cell[];
  readonly rows: readonly Html[];
  readonly empty: string;
}): Html {
  const { id, heads, rows, empty } = options;
  return html`<table id="${id}">
    <thead>
      <tr>
        ${heads.map((head) => html`<th>${head}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.length > 0 ? rows : emptyRow(empty, heads.length)}
    </tbody>
  </table>`;
}

/**
 * A table of name / value rows (a record's fields, headers); a `null` value shows as a dash,
 * `numeric` values are right-aligned, `empty` stands in for no rows.
 */
export function fieldTable(
  id: string,
  fields: readonly (readonly [string, Cell | null])[],
  options: { readonly numeric?: boolean; readonly empty?: string } = {},
): Html {
  const rows = fields.map(
    ([name, value]) =>
      html`<tr>
        <th>${name}</th>
        ${options.numeric === true ? html`<td class="n">${value ?? '—'}</td>` : html`<td>${value ?? '—'}</td>`}
      </tr>`,
  );
  return html`<table id="${id}">
    <tbody>
      ${rows.length > 0 || options.empty === undefined ? rows : emptyRow(options.empty)}
    </tbody>
  </table>`;
}
