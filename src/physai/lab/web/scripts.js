// physai lab: the lab's scripts against MuJoCo's model and data. A script that does not compile or throws is
// reported once (in the page, in the test hook's errors, as a console warning) and stops nothing else.
import { compileScript, compileExpr, runScript, errorText } from './lib.js';

/** Show an error once: in the page's error list, in state.errors and as a console warning. */
export function report(state, where, error) {
  const text = `${where}: ${errorText(error)}`;
  if (state.seenErrors.has(text)) return;
  state.seenErrors.add(text);
  state.errors.push(text);
  const li = document.createElement('li');
  li.textContent = text;
  state.page.errors.appendChild(li);
  state.page.errors.hidden = false;
  console.warn(`physai lab: ${text}`);
}

/** A script (or, with expr, an expression) compiled; null, reported, when it does not parse. */
export function compile(state, where, code, expr = false) {
  try {
    return expr ? compileExpr(code) : compileScript(code);
  } catch (error) {
    report(state, where, error);
    return null;
  }
}

/** Run a compiled script on the lab's model, data and lib; its value, or undefined (reported) when it throws. */
export function run(state, where, fn, value) {
  if (!fn) return undefined;
  const result = runScript(fn, state.model, state.data, state.lib, value);
  if (!result.ok) report(state, where, result.error);
  return result.ok ? result.value : undefined;
}
