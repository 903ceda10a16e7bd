import type { Context, Hono } from 'hono';
import type { LoginThrottle } from './login-throttle';
import type { ResolvedDashboardOptions } from './options';
import type { Access, View } from './render/html';
import type { StatusSampler } from './sampler';
import type { DashboardClient } from './types';

/** Per-request values the middleware sets for the routes. */
export interface AppEnv {
  /** What the server handed over with the request (`dashboard.fetch(request, client)`). */
  Bindings: DashboardClient;
  Variables: {
    nonce: string;
    access: Access;
    /** The session's CSRF token, when logged in. */
    csrf: string | undefined;
  };
}

export type App = Hono<AppEnv>;
export type Ctx = Context<AppEnv>;

/** What the routes share. */
export interface Deps {
  readonly options: ResolvedDashboardOptions;
  readonly sampler: StatusSampler;
  /** Counts wrong tokens per client (channel and address) and in all. */
  readonly throttle: LoginThrottle;
}

/** Form fields; a repeated field (the bulk `id` checkboxes) is an array. */
export type Form = Record<string, string | string[]>;

/** The request's form body (parsed once and cached by Hono); files are dropped. */
export async function formOf(c: Ctx): Promise<Form> {
  const parsed = await c.req.parseBody({ all: true });
  const form: Form = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value === 'string') form[name] = value;
    else if (Array.isArray(value)) {
      form[name] = value.filter((v): v is string => typeof v === 'string');
    }
  }
  return form;
}

/** What an action did, carried to the page it redirects to as fixed codes and counts. */
export interface Done {
  readonly done: 'requeued' | 'deleted' | 'released' | 'logged-in' | 'logged-out';
  readonly what?: 'dead-letter' | 'outbox-event' | 'record';
  readonly n?: number;
  readonly failed?: number;
  /** The outbox row a requeue made (JSON answers only). */
  readonly outboxId?: string;
  /** An action on one row: changing nothing is a 409 in a JSON answer. */
  readonly one?: boolean;
}

const VERBS: Record<Done['done'], string> = {
  requeued: 'Requeued',
  deleted: 'Deleted',
  released: 'Released',
  'logged-in': 'Logged in.',
  'logged-out': 'Logged out.',
};
const NOUNS: Record<NonNullable<Done['what']>, string> = {
  'dead-letter': 'dead letter',
  'outbox-event': 'outbox event',
  record: 'record',
};

/** What a row kind is called in text: `dead letter`. */
export function nounOf(what: NonNullable<Done['what']>): string {
  return NOUNS[what];
}

function count(value: string | undefined): number | undefined {
  return value !== undefined && /^\d{1,6}$/.test(value) ? Number(value) : undefined;
}

/**
 * The notice of a page reached after an action. Built from known words and numbers only,
 * so a crafted link cannot put text of its own on the page.
 */
export function noticeOf(c: Ctx): string | undefined {
  const done = c.req.query('done');
  if (done === undefined || !(done in VERBS)) return undefined;
  const verb = VERBS[done as Done['done']];
  const what = c.req.query('what');
  const n = count(c.req.query('n'));
  if (what === undefined || !(what in NOUNS) || n === undefined) return verb;
  const noun = NOUNS[what as NonNullable<Done['what']>];
  const failed = count(c.req.query('failed')) ?? 0;
  const text = `${verb} ${n} ${noun}${n === 1 ? '' : 's'}.`;
  return failed === 0
    ? text
    : `${text} ${failed} could not be changed (gone or not in a state that allows it).`;
}

/**
 * Whether the client asked for JSON (`Accept: application/json`), as a script may: actions
 * and errors then answer JSON instead of a redirect or a page. Browsers never ask for it.
 */
export function wantsJson(c: Ctx): boolean {
  return /\bapplication\/json\b/i.test(c.req.header('accept') ?? '');
}

/**
 * A 303 to `path` (below the base) with the action's notice; for a client that wants JSON,
 * what was done: `{ done, what, n, failed, outboxId }` with 200, or 409 when an action on one
 * row changed nothing.
 */
export function redirectDone(c: Ctx, deps: Deps, path: string, done: Done, query = ''): Response {
  if (wantsJson(c)) {
    const { one, ...answer } = done;
    return c.json(answer, one === true && done.n === 0 ? 409 : 200);
  }
  const params = new URLSearchParams(query);
  params.set('done', done.done);
  if (done.what !== undefined) params.set('what', done.what);
  if (done.n !== undefined) params.set('n', String(done.n));
  if (done.failed !== undefined && done.failed > 0) params.set('failed', String(done.failed));
  return c.redirect(`${deps.options.basePath}${path}?${params.toString()}`, 303);
}

/** The page's path below the base path. */
export function pathOf(c: Ctx, deps: Deps): string {
  const path = c.req.path.slice(deps.options.basePath.length);
  return path === '' ? '/' : path;
}

/** What the renderers need for this request. */
export function viewOf(c: Ctx, deps: Deps): View {
  return {
    title: deps.options.title,
    base: deps.options.basePath,
    nonce: c.get('nonce'),
    access: c.get('access'),
    csrf: c.get('csrf'),
    path: pathOf(c, deps),
    notice: noticeOf(c),
  };
}
