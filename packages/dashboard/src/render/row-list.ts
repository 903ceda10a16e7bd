import { canAct, href, html, type Html, type View } from './html';
import { csrfField } from './layout';
import { dataTable } from './table';

/** How a list page shows its rows: each selectable for a bulk requeue or delete. */
export interface RowListOptions<Row> {
  /** The list's path (`/dead-letters`); rows link to `path/id`, the form posts to `path/bulk`. */
  readonly path: string;
  /** What a row is, for the confirmation: `dead letter`. */
  readonly noun: string;
  /** The filters to come back to after the action. */
  readonly back: string;
  /** Whether the rows can be requeued (else only deleted). */
  readonly requeue: boolean;
  readonly tableId: string;
  /** The headings of the columns after the checkbox and the id. */
  readonly heads: readonly string[];
  readonly rows: readonly Row[];
  /** The cells of a row after the checkbox and the id. */
  readonly cells: (row: Row) => Html;
  /** What stands in for no rows. */
  readonly empty: string;
  /** Cursor of the next page, if there may be more. */
  readonly next: string | undefined;
}

function bulkButtons(view: View, requeue: boolean): Html {
  return canAct(view)
    ? html`${requeue ? html`<button type="submit" name="action" value="requeue">Requeue selected</button>` : ''}
        <button type="submit" name="action" value="delete" class="danger">Delete selected</button>`
    : html`<button type="button" disabled>Requeue selected</button
        ><button type="button" disabled>Delete selected</button>`;
}

/** The rows in a bulk form (select all, select each, requeue or delete them), then the next-page link. */
export function rowList<Row extends { readonly id: string }>(
  view: View,
  options: RowListOptions<Row>,
): Html {
  const { path, back, next } = options;
  const disabled = canAct(view) ? '' : html`disabled`;
  const selectAll = html`<input
    type="checkbox"
    data-select-all
    aria-label="select all"
    ${disabled}
  />`;
  const rows = options.rows.map(
    (row) =>
      html`<tr data-id="${row.id}">
        <td>
          <input
            type="checkbox"
            name="id"
            value="${row.id}"
            ${disabled}
            aria-label="select ${row.id}"
          />
        </td>
        <td><a href="${href(view, `${path}/${row.id}`)}">${row.id}</a></td>
        ${options.cells(row)}
      </tr>`,
  );
  const nextLink =
    next === undefined
      ? ''
      : html`<a
          id="next-page"
          href="${href(view, `${path}?${back === '' ? '' : `${back}&`}after=${next}`)}"
          >Next page →</a
        >`;
  return html`<form
      method="post"
      action="${href(view, `${path}/bulk`)}"
      id="bulk"
      data-bulk
      data-confirm="${options.noun}(s)"
    >
      ${csrfField(view)}<input type="hidden" name="back" value="${back}" />
      <div class="actions">${bulkButtons(view, options.requeue)}</div>
      ${dataTable({
        id: options.tableId,
        heads: [selectAll, 'Id', ...options.heads],
        rows,
        empty: options.empty,
      })}
    </form>
    ${nextLink}`;
}
