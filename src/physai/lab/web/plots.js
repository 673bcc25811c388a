// physai lab: scrolling plots of the traces' expressions against simulated time, drawn on 2D canvases.
import { niceTicks } from './lib.js';
import { compile, run } from './scripts.js';

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf'];

/** One plot of spec.plots: its traces' samples over the last `window` seconds and its canvas. */
export class Plot {
  constructor(state, p) {
    this.state = state;
    this.window = p.window ?? 10;
    this.ylabel = p.ylabel ?? '';
    this.traces = p.traces.map((t, i) => ({
      label: t.label, dash: !!t.dash, color: t.color ?? PALETTE[i % PALETTE.length],
      fn: compile(state, `plot trace "${t.label}"`, t.expr, true), t: [], y: [],
    }));
    const box = document.createElement('div');
    box.className = 'plot';
    this.canvas = document.createElement('canvas');
    box.appendChild(this.canvas);
    state.page.plots.appendChild(box);
  }

  clear() { for (const tr of this.traces) { tr.t.length = 0; tr.y.length = 0; } }

  sample(time) {
    for (const tr of this.traces) {
      const v = run(this.state, `plot trace "${tr.label}"`, tr.fn);
      if (typeof v !== 'number' || !Number.isFinite(v)) continue;
      tr.t.push(time); tr.y.push(v);
      while (tr.t.length && tr.t[0] < time - this.window) { tr.t.shift(); tr.y.shift(); }
    }
  }

  draw(time) {
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 320, h = c.clientHeight || 150;
    if (c.width !== Math.round(w * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const left = 58, right = 8, top = 20, bottom = 22;
    let lo = Infinity, hi = -Infinity;
    for (const tr of this.traces) for (const y of tr.y) { lo = Math.min(lo, y); hi = Math.max(hi, y); }
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-12 * Math.max(1, Math.abs(hi))) { const m = Math.max(Math.abs(hi) * 0.05, 1e-9); lo -= m; hi += m; }
    const pad = 0.08 * (hi - lo); lo -= pad; hi += pad;
    const t1 = Math.max(time, this.window), t0 = t1 - this.window;
    const X = (t) => left + (t - t0) / (t1 - t0) * (w - left - right);
    const Y = (y) => top + (hi - y) / (hi - lo) * (h - top - bottom);
    g.strokeStyle = '#999'; g.lineWidth = 1; g.setLineDash([]);
    g.strokeRect(left, top, w - left - right, h - top - bottom);
    g.fillStyle = '#333'; g.font = '11px sans-serif';
    g.textAlign = 'right';
    for (const { value, text } of niceTicks(lo, hi, 3)) {               // round values, each with a grid line
      g.fillText(text, left - 4, Y(value) + 4);
      g.strokeStyle = '#eee'; g.beginPath(); g.moveTo(left + 1, Y(value)); g.lineTo(w - right - 1, Y(value)); g.stroke();
    }
    g.textAlign = 'center';
    g.fillText(`${t0.toFixed(1)} s`, X(t0) + 14, h - 6);
    g.fillText(`${t1.toFixed(1)} s`, X(t1) - 16, h - 6);
    g.textAlign = 'left';
    g.fillText(this.ylabel, 4, 12);
    let lx = left + 120;
    for (const tr of this.traces) {
      g.strokeStyle = tr.color; g.lineWidth = 1.6; g.setLineDash(tr.dash ? [5, 4] : []);
      g.beginPath();
      tr.t.forEach((t, i) => (i ? g.lineTo(X(t), Y(tr.y[i])) : g.moveTo(X(t), Y(tr.y[i]))));
      g.stroke();
      g.beginPath(); g.moveTo(lx, 8); g.lineTo(lx + 18, 8); g.stroke();
      g.fillText(tr.label, lx + 22, 12);
      lx += 30 + g.measureText(tr.label).width;
    }
    g.setLineDash([]);
  }
}

/** A Plot for each of spec.plots, into state.plots. */
export function buildPlots(state) {
  for (const p of state.spec.plots) state.plots.push(new Plot(state, p));
}
