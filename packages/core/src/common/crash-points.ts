/**
 * Crash points for the crash-point matrix (`pnpm crash-matrix`). Not public API.
 *
 * A crash point is a named place in the code where a process can die. When the environment
 * variable `JUSTONCE_CRASH_AT` names a point (`point` or `point@N` for the N-th time it is
 * reached, counting from 1), the process kills itself with SIGKILL there: no `finally`, no
 * flush, exactly like an OOM kill. When the variable is unset, the check is one comparison
 * against `undefined`, read once when this module loads.
 *
 * @internal
 */

const setting = readSetting();
let reached = 0;

function readSetting(): { readonly point: string; readonly nth: number } | undefined {
  const raw = typeof process === 'undefined' ? undefined : process.env['JUSTONCE_CRASH_AT'];
  if (raw === undefined || raw === '') return undefined;
  const at = raw.lastIndexOf('@');
  if (at < 0) return { point: raw, nth: 1 };
  const nth = Number(raw.slice(at + 1));
  return { point: raw.slice(0, at), nth: Number.isInteger(nth) && nth > 0 ? nth : 1 };
}

/**
 * Dies here if the crash matrix asked for this point; otherwise does nothing.
 * @internal
 */
export function crashPoint(name: string): void {
  if (setting === undefined || setting.point !== name) return;
  reached += 1;
  if (reached < setting.nth) return;
  process.kill(process.pid, 'SIGKILL');
}
