import { RESILIENCE_HEAD, resilienceRows, type ConsumerResilience } from '@justonce/core/admin';
import { html, type Html } from '../render/html';
import { dataTable } from '../render/table';

/** A consumer's rows, one per breaker key; a breaker not closed is marked. */
function consumerRows(c: ConsumerResilience, at: Date): Html[] {
  const cells = resilienceRows(c, at);
  const keys = c.breakers.length === 0 ? [undefined] : c.breakers;
  return cells.map((row, i) => {
    const breaker = keys[i];
    const state = breaker?.state ?? 'none';
    const [consumer, key, shown, forHow, budget, shed] = row;
    const tds = html`<td>${consumer}</td>
      <td>${key}</td>
      <td>${shown}</td>
      <td class="n">${forHow}</td>
      <td>${budget}</td>
      <td>${shed}</td>`;
    return state === 'open' || state === 'half-open'
      ? html`<tr class="warn" data-consumer="${c.consumer}" data-state="${state}">
          ${tds}
        </tr>`
      : html`<tr data-consumer="${c.consumer}" data-state="${state}">
          ${tds}
        </tr>`;
  });
}

/**
 * The overview's panel of the consumers' load shedding (docs/load-shedding.md): each breaker's
 * state and for how long, the retry budget spent and left and the sheds over its window, as
 * the consumers last reported them; nothing when no consumer with `resilience` reported.
 */
export function loadSheddingPanel(status: {
  readonly at: Date;
  readonly resilience: readonly ConsumerResilience[];
}): Html | string {
  if (status.resilience.length === 0) return '';
  return html`<h2>Load shedding</h2>
    <p class="muted">
      Breakers now; retry budget and sheds over the budget's window. A consumer that has not
      reported for 30 s is marked stale.
    </p>
    ${dataTable({
      id: 'load-shedding',
      heads: [...RESILIENCE_HEAD].map((h) => h[0]?.toUpperCase() + h.slice(1)),
      rows: status.resilience.flatMap((c) => consumerRows(c, status.at)),
      empty: 'No consumer reported.',
    })}`;
}
