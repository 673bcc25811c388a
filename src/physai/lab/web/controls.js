// physai lab: the buttons and selects of spec.controls; a press or choice runs its script, then mj_forward and a redraw.
import { afterChange } from './loop.js';
import { compile, run } from './scripts.js';

/** A button or a labelled select per control, their scripts compiled into state.scripts by label. */
export function buildControls(state) {
  const box = state.page.controls;
  for (const c of state.spec.controls) {
    if (c.type === 'button') {
      const b = document.createElement('button');
      b.textContent = c.label;
      state.scripts[c.label] = compile(state, `button "${c.label}"`, c.run);
      b.addEventListener('click', () => press(state, c.label));
      box.appendChild(b);
    } else {
      const label = document.createElement('label');
      label.textContent = `${c.label} `;
      const sel = document.createElement('select');
      c.options.forEach(([text], k) => sel.add(new Option(text, String(k))));
      sel.selectedIndex = c.options.findIndex((o) => o[1] === c.value);
      state.scripts[c.label] = compile(state, `select "${c.label}"`, c.apply);
      sel.addEventListener('change', () => select(state, c.label, c.options[sel.selectedIndex][1]));
      c.element = sel;
      label.appendChild(sel);
      box.appendChild(label);
    }
  }
}

/** Each select's script with its starting value (after setup). */
export function applySelects(state) {
  for (const c of state.spec.controls) if (c.type === 'select') run(state, `select "${c.label}"`, state.scripts[c.label], c.value);
}

function control(state, label, type) {
  const controls = state.spec.controls;
  const c = controls.find((x) => x.label === label && x.type === type);
  if (!c) throw new Error(`no ${type} labelled "${label}"; ${type}s: ${controls.filter((x) => x.type === type).map((x) => x.label).join(', ')}`);
  return c;
}

/** Press the button labelled `label` (Error if there is none). */
export function press(state, label) {
  control(state, label, 'button');
  run(state, `button "${label}"`, state.scripts[label]);
  afterChange(state);
}

/** Choose the option whose value is `value` in the select labelled `label` (Error if there is none). */
export function select(state, label, value) {
  const c = control(state, label, 'select');
  const k = c.options.findIndex((o) => o[1] === value || String(o[1]) === String(value));
  if (k < 0) throw new Error(`select "${label}" has no option with value ${value}; values: ${c.options.map((o) => o[1]).join(', ')}`);
  c.element.selectedIndex = k;
  run(state, `select "${label}"`, state.scripts[label], c.options[k][1]);
  afterChange(state);
}
