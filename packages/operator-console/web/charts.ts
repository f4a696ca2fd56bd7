import { html } from "htm/preact";
import { when } from "./format.js";

const W = 480;
const H = 160;
const PAD = 32;

/**
 * A step chart of the number of unknown effects over time (inline SVG drawn from the data; each
 * sample is taken by the API when effects change). Labelled for screen readers by its caption.
 */
export function UnknownOverTimeChart({ series }: { series: Array<{ atMs: number; count: number }> }) {
  if (series.length === 0) return html`<figure><figcaption>Unknown effects over time: no samples yet.</figcaption></figure>`;
  const t0 = series[0]!.atMs;
  const t1 = Math.max(series.at(-1)!.atMs, t0 + 1);
  const max = Math.max(1, ...series.map((p) => p.count));
  const x = (t: number) => PAD + ((t - t0) / (t1 - t0)) * (W - 2 * PAD);
  const y = (n: number) => H - PAD - (n / max) * (H - 2 * PAD);
  let d = "";
  series.forEach((p, i) => {
    d += i === 0 ? `M${x(p.atMs)},${y(p.count)}` : `H${x(p.atMs)}V${y(p.count)}`;
  });
  d += `H${W - PAD}`;
  const last = series.at(-1)!;
  return html`<figure class="chart" data-testid="chart-unknown">
    <figcaption>
      Unknown effects over time (${series.length} ${series.length === 1 ? "sample" : "samples"} since the API started; now ${last.count})
    </figcaption>
    <svg
      viewBox=${`0 0 ${W} ${H}`}
      role="img"
      aria-label=${`Unknown effects over time: from ${series[0]!.count} at ${when(t0)} to ${last.count} at ${when(last.atMs)}, at most ${max}`}
    >
      <line x1=${PAD} y1=${H - PAD} x2=${W - PAD} y2=${H - PAD} class="axis" />
      <line x1=${PAD} y1=${PAD} x2=${PAD} y2=${H - PAD} class="axis" />
      <text x=${PAD - 6} y=${y(max) + 4} text-anchor="end" class="tick">${max}</text>
      <text x=${PAD - 6} y=${H - PAD + 4} text-anchor="end" class="tick">0</text>
      <text x=${PAD} y=${H - 10} class="tick">${when(t0).slice(11, 19)}</text>
      <text x=${W - PAD} y=${H - 10} text-anchor="end" class="tick">${when(last.atMs).slice(11, 19)}</text>
      <path d=${d} class="series" />
    </svg>
  </figure>`;
}

/** Horizontal bars: how many lookups ended with each outcome and reason code. */
export function LookupOutcomeChart({ rows }: { rows: Array<{ outcome: string; reasonCode: string | null; count: number }> }) {
  if (rows.length === 0) return html`<figure><figcaption>Lookup outcomes by reason: no lookup in the last 24 hours.</figcaption></figure>`;
  const max = Math.max(1, ...rows.map((r) => r.count));
  const width = 420;
  const rowH = 26;
  const labelW = 250;
  const h = rows.length * rowH + 10;
  return html`<figure class="chart" data-testid="chart-lookups">
    <figcaption>Lookup outcomes by reason, last 24 hours</figcaption>
    <svg
      viewBox=${`0 0 ${width} ${h}`}
      role="img"
      aria-label=${rows.map((r) => `${r.outcome}${r.reasonCode ? ` (${r.reasonCode})` : ""}: ${r.count}`).join("; ")}
    >
      ${rows.map((r, i) => {
        const barW = ((width - labelW - 40) * r.count) / max;
        const yy = 5 + i * rowH;
        return html`<g>
          <text x=${labelW - 8} y=${yy + 16} text-anchor="end" class="tick">${r.outcome}${r.reasonCode ? ` · ${r.reasonCode}` : ""}</text>
          <rect x=${labelW} y=${yy + 3} width=${Math.max(2, barW)} height=${rowH - 8} class=${`bar bar-${r.outcome}`} />
          <text x=${labelW + Math.max(2, barW) + 6} y=${yy + 16} class="tick">${r.count}</text>
        </g>`;
      })}
    </svg>
  </figure>`;
}
