// physai lab: the readouts table, one row per readout: its label and its expression's value, printed.
import { formatNumber } from './lib.js';
import { compile, run } from './scripts.js';

/** Rows of the readouts table for spec.readouts, their expressions compiled into state.readouts. */
export function buildReadouts(state) {
  for (const r of state.spec.readouts) {
    const tr = document.createElement('tr');
    const th = document.createElement('th'), td = document.createElement('td');
    th.textContent = r.label;
    tr.append(th, td);
    state.page.readouts.appendChild(tr);
    state.readouts.push({ label: r.label, fn: compile(state, `readout "${r.label}"`, r.expr, true),
      digits: r.digits ?? 4, format: r.format ?? 'fixed', cell: td });
  }
}

/** Each readout's value by label (NaN when its expression throws or gives no number). */
export function readValues(state) {
  const values = {};
  for (const r of state.readouts) {
    const v = run(state, `readout "${r.label}"`, r.fn);
    values[r.label] = typeof v === 'number' ? v : NaN;
  }
  return values;
}

/** The values as the table prints them, by label. */
export function printed(state, values) {
  const text = {};
  for (const r of state.readouts) text[r.label] = formatNumber(values[r.label], r.digits, r.format);
  return text;
}
