import { WINDOW_MS, type Sample } from '../sampler';
import { formatTime } from './format';
import { html, type Html } from './html';

const WIDTH = 640;
const HEIGHT = 180;
const PAD = { left: 44, right: 12, top: 12, bottom: 24 } as const;

/** The chart's lines: figure, label and colour. */
const SERIES = [
  { key: 'outboxPending', label: 'outbox pending', colour: '#2563eb' },
  { key: 'outboxDead', label: 'outbox dead', colour: '#dc2626' },
  { key: 'deadLetters', label: 'dead letters waiting', colour: '#d97706' },
] as const satisfies readonly { key: keyof Sample; label: string; colour: string }[];

function niceMax(value: number): number {
  if (value <= 4) return 4;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

/**
 * An inline SVG of outbox pending, outbox dead and dead letters waiting over the last hour,
 * from the samples taken while the dashboard runs ("since …" when that is less than an hour).
 */
export function statusChart(samples: readonly Sample[], now: Date): Html {
  if (samples.length === 0) {
    return html`<p class="muted">No samples yet: the chart fills in while the dashboard runs.</p>`;
  }
  const end = Math.max(now.getTime(), samples.at(-1)!.at.getTime());
  const first = samples[0]!.at;
  // Less than an hour of samples: the x axis spans what there is, and says since when.
  const partial = first.getTime() > end - WINDOW_MS;
  const start = partial ? first.getTime() : end - WINDOW_MS;
  const span = Math.max(end - start, 1000);
  const max = niceMax(Math.max(...samples.flatMap((s) => SERIES.map((l) => s[l.key]))));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (at: Date): number => PAD.left + ((at.getTime() - start) / span) * plotW;
  const y = (v: number): number => PAD.top + plotH - (v / max) * plotH;
  const round = (n: number): string => n.toFixed(1);
  const lines = SERIES.map((line) => {
    const points = samples.map((s) => `${round(x(s.at))},${round(y(s[line.key]))}`).join(' ');
    return html`<polyline fill="none" stroke="${line.colour}" stroke-width="2" points="${points}"
      ><title>${line.label}</title></polyline
    >`;
  });
  const last = samples.at(-1)!;
  return html`<figure class="chart">
    <svg
      viewBox="0 0 ${WIDTH} ${HEIGHT}"
      width="${WIDTH}"
      height="${HEIGHT}"
      role="img"
      aria-label="Outbox pending, outbox dead and dead letters waiting over time"
    >
      <line
        x1="${PAD.left}"
        y1="${PAD.top}"
        x2="${PAD.left}"
        y2="${PAD.top + plotH}"
        stroke="#999"
      />
      <line
        x1="${PAD.left}"
        y1="${PAD.top + plotH}"
        x2="${WIDTH - PAD.right}"
        y2="${PAD.top + plotH}"
        stroke="#999"
      />
      <text x="${PAD.left - 6}" y="${PAD.top + 4}" text-anchor="end" font-size="11">${max}</text>
      <text x="${PAD.left - 6}" y="${PAD.top + plotH}" text-anchor="end" font-size="11">0</text>
      <text x="${PAD.left}" y="${HEIGHT - 6}" font-size="11">
        ${partial ? formatTime(first).slice(11) : '−60 min'}
      </text>
      <text x="${WIDTH - PAD.right}" y="${HEIGHT - 6}" text-anchor="end" font-size="11">now</text>
      ${lines}
    </svg>
    <figcaption>
      ${SERIES.map(
        (line) =>
          html`<span class="legend"
            ><svg width="12" height="12" aria-hidden="true">
              <rect width="12" height="12" fill="${line.colour}" />
            </svg>
            ${line.label}: <b>${last[line.key]}</b></span
          > `,
      )}
      <br /><span class="muted" id="chart-range"
        >${partial ? `since ${formatTime(first)} (sampled while this dashboard runs; the store keeps no history)` : 'last hour'},
        ${samples.length} samples</span
      >
    </figcaption>
  </figure>`;
}
