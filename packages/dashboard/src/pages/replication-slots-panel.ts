import { bytesFigure, type ReplicationSlotStatus } from '@justonce/core/admin';
import { formatAge, formatTime } from '../render/format';
import { html, type Html } from '../render/html';
import { dataTable } from '../render/table';

/** Whether a slot needs an operator: too far behind, or its WAL at risk or gone. */
export function slotNeedsAttention(slot: ReplicationSlotStatus, warnBytes: number): boolean {
  return (
    (slot.lagBytes !== null && slot.lagBytes >= warnBytes) ||
    slot.walStatus === 'unreserved' ||
    slot.walStatus === 'lost'
  );
}

function activeCell(slot: ReplicationSlotStatus): Html | string {
  if (slot.active) return `yes (pid ${slot.activePid ?? '?'})`;
  return slot.inactiveSince === null ? 'no' : `no, since ${formatTime(slot.inactiveSince)}`;
}

function slotRow(slot: ReplicationSlotStatus, warnBytes: number): Html {
  const row = html`<td>${slot.name}</td>
    <td>${activeCell(slot)}</td>
    <td class="n">${slot.lagBytes === null ? '—' : bytesFigure(slot.lagBytes)}</td>
    <td class="n">${formatAge(slot.lagSeconds)}</td>
    <td class="n">${slot.retainedBytes === null ? '—' : bytesFigure(slot.retainedBytes)}</td>
    <td>${slot.walStatus ?? '—'}</td>`;
  return slotNeedsAttention(slot, warnBytes)
    ? html`<tr class="warn" data-slot="${slot.name}">
        ${row}
      </tr>`
    : html`<tr data-slot="${slot.name}">
        ${row}
      </tr>`;
}

/**
 * The overview's panel of the database's logical replication slots (a log relay's), or
 * nothing when it has none. A slot behind by `warnBytes` or more, or whose WAL is `unreserved`
 * or `lost`, is marked, with a note above the table saying how many.
 */
export function replicationSlotsPanel(
  slots: readonly ReplicationSlotStatus[],
  warnBytes: number,
): Html | string {
  if (slots.length === 0) return '';
  const marked = slots.filter((slot) => slotNeedsAttention(slot, warnBytes)).length;
  const note =
    marked === 0
      ? ''
      : html`<p class="warn" id="slot-warning">
          ${marked} of ${slots.length} replication slot${slots.length === 1 ? '' : 's'}
          ${marked === 1 ? 'is' : 'are'} ${bytesFigure(warnBytes)} or more behind, or at risk of
          losing the WAL ${marked === 1 ? 'it needs' : 'they need'}: see the runbook "A replication
          slot is behind".
        </p>`;
  return html`<h2>Replication slots</h2>
    ${note}
    ${dataTable({
      id: 'replication-slots',
      heads: ['Slot', 'Active', 'Lag', 'Lag time', 'Retained WAL', 'WAL status'],
      rows: slots.map((slot) => slotRow(slot, warnBytes)),
      empty: 'No logical replication slots.',
    })}`;
}
