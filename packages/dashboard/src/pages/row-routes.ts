import { singleResult } from '../bulk';
import { formOf, nounOf, redirectDone, viewOf, type App, type Ctx, type Deps } from '../context';
import { errorPage } from '../error-page';
import { BadInputError, parseId, parseIds } from '../parse';
import type { Html, View } from '../render/html';
import { layout } from '../render/layout';

/** A kind of row the dashboard can requeue and delete, one by one or in bulk. */
export interface RowRoutes<Row extends { readonly id: string }> {
  /** The list's path: `/dead-letters`. */
  readonly path: string;
  readonly what: 'dead-letter' | 'outbox-event';
  /** Only the filters of the list's query string, to come back to after a bulk action. */
  readonly filters: (query: string) => string;
  readonly get: (id: string) => Promise<Row | undefined>;
  /** The detail page's content. */
  readonly detail: (view: View, row: Row) => Html;
  /** Requeues one row of a bulk action, run by `admin.bulk` (which says what fails a row). */
  readonly requeue: (id: string) => Promise<unknown>;
  /**
   * Requeues one row from its page: the id of the row to show next and of the outbox row made,
   * `null` if not requeued.
   */
  readonly requeueOne: (
    c: Ctx,
    id: string,
  ) => Promise<{ readonly show: string; readonly outboxId: string } | null>;
  /** Deletes one row: `false` when it was not there to delete. */
  readonly delete: (id: string) => Promise<boolean>;
}

/**
 * `path/bulk` (requeue or delete the selected ids, back to the filtered list), `path/:id` (the
 * detail page, or 404), `path/:id/requeue` and `path/:id/delete`.
 */
export function registerRowRoutes<Row extends { readonly id: string }>(
  app: App,
  deps: Deps,
  rows: RowRoutes<Row>,
): void {
  const { path, what } = rows;
  const noun = nounOf(what);

  app.post(`${path}/bulk`, async (c) => {
    const form = await formOf(c);
    const ids = parseIds(form['id']);
    const back = rows.filters(typeof form['back'] === 'string' ? form['back'] : '');
    const action = form['action'];
    if (action !== 'requeue' && action !== 'delete') {
      throw new BadInputError('action must be requeue or delete');
    }
    const result = await deps.options.admin.bulk(
      ids,
      action === 'requeue' ? rows.requeue : rows.delete,
    );
    const done = action === 'requeue' ? 'requeued' : 'deleted';
    const counts = { n: result.done.length, failed: result.failed.length };
    return redirectDone(c, deps, path, { done, what, ...counts }, back);
  });

  app.get(`${path}/:id`, async (c) => {
    const id = parseId(c.req.param('id'));
    const row = await rows.get(id);
    if (row === undefined) return errorPage(c, deps, 404, `No ${noun} ${id}.`);
    const view = viewOf(c, deps);
    const title = `${noun.charAt(0).toUpperCase()}${noun.slice(1)} ${row.id}`;
    return c.html(layout(view, title, rows.detail(view, row)));
  });

  app.post(`${path}/:id/requeue`, async (c) => {
    const id = parseId(c.req.param('id'));
    const requeued = await rows.requeueOne(c, id);
    return redirectDone(c, deps, `${path}/${requeued?.show ?? id}`, {
      done: 'requeued',
      what,
      ...singleResult(requeued !== null),
      ...(requeued === null ? {} : { outboxId: requeued.outboxId }),
      one: true,
    });
  });

  app.post(`${path}/:id/delete`, async (c) => {
    const deleted = await rows.delete(parseId(c.req.param('id')));
    return redirectDone(c, deps, path, {
      done: 'deleted',
      what,
      ...singleResult(deleted),
      one: true,
    });
  });
}
