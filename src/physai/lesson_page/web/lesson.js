// physai lesson page: the blocks of /lesson.json (physai.lesson_page.reader) as a page, math typeset by KaTeX, and the
// test hook window.lesson:
//   ready; questions() -> [{id, kind, options}]; answer(id, value) -> {correct, explanation};
//   checklist() -> [{label, done}]; check(index, done); mathErrors(); labs()
import katex from '/vendor/katex/katex.mjs';

const questions = new Map();      // id -> {q, quiz, show(result, value)}
const checklist = [];             // {label, box}
let storageKey = '', mathErrors = 0;
const hook = { ready: false };
window.lesson = hook;

function element(tag, className, html) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (html !== undefined) e.innerHTML = html;
  return e;
}

/** The verdict on `value` for question q: true/false, or null where the lesson marks no answer. A numeric answer is
 *  right within q.tol (plus 1e-12 of the answer's size, for the rounding of answer +- tol). */
function grade(q, value) {
  if (q.kind === 'numeric') {
    const x = typeof value === 'number' ? value : typedNumber(value);
    if (!Number.isFinite(x)) throw new Error(`question ${q.id} needs a number, got ${value}`);
    return Math.abs(x - q.answer) <= q.tol + 1e-12 * Math.max(Math.abs(q.answer), q.tol);
  }
  if (!Number.isInteger(value) || value < 0 || value >= q.options.length)
    throw new Error(`question ${q.id} has options 0 to ${q.options.length - 1}, got ${value}`);
  return q.answer === null || q.answer === undefined ? null : value === q.answer;
}

/** The number a learner typed: "0.486", "0,486", "1,000.5", "−0.5" (a Unicode minus), "2e-3 kg m^2" (a unit after
 *  it); NaN when it does not start with a number. */
function typedNumber(text) {
  let t = String(text).trim().replace(/[\u2212\u2013]/g, '-').replace(/[\s\u00a0\u202f]+(?=\d)/g, '');
  if (/^[-+]?\d{1,3}(,\d{3})+(\.\d*)?(?!\d)/.test(t)) t = t.replace(/,/g, '');   // thousands
  else t = t.replace(/^([-+]?\d*),(\d)/, '$1.$2');                                  // a decimal comma
  const m = t.match(/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?/i);
  return m ? Number(m[0]) : NaN;
}

function answer(id, value) {
  const entry = questions.get(id);
  if (!entry) throw new Error(`no question ${id}; questions(): ${[...questions.keys()].join(', ')}`);
  const correct = grade(entry.q, value);
  entry.show(correct, value);
  if (!entry.quiz.first.has(id)) entry.quiz.first.set(id, correct);
  entry.quiz.update();
  return { correct, explanation: entry.explainText() };
}

// ---- blocks ----

function quizBlock(block, className) {
  const section = element('section', className);
  const title = element('h3', '', block.title ? `<span>${escapeHtml(block.title)}</span>` : '<span>Questions</span>');
  const score = element('span', 'score');
  title.append(score);
  section.append(title);
  if (block.intro) section.append(element('p', 'intro', block.intro));
  const graded = block.questions.filter((q) => q.answer !== null && q.answer !== undefined).length;
  const quiz = {
    first: new Map(),
    update() {
      const right = [...this.first.values()].filter((v) => v === true).length;
      score.textContent = graded ? `score ${right} / ${graded}` : `${this.first.size} / ${block.questions.length} seen`;
    },
  };
  quiz.update();
  block.questions.forEach((q, n) => section.append(questionBlock(q, n, quiz)));
  return section;
}

function questionBlock(q, n, quiz) {
  const div = element('div', 'question');
  div.dataset.id = q.id;
  div.append(element('p', 'q', `<b>${n + 1}.</b> ${q.text}`));
  const verdict = element('p', 'verdict');
  const explain = element('div', 'explain', q.explain || '');
  explain.hidden = true;
  let show;
  if (q.kind === 'numeric') {
    const row = element('p', 'numeric');
    const input = element('input');
    input.type = 'text';
    input.inputMode = 'decimal';
    input.setAttribute('aria-label', 'your answer');
    const button = element('button', '', 'Check');
    row.append(input, ' ', element('span', 'unit', escapeHtml(q.unit || '')), ' ', button);
    const submit = () => {
      try { answer(q.id, input.value); } catch { verdict.className = 'verdict wrong'; verdict.textContent = 'Type a number.'; }
    };
    button.addEventListener('click', submit);
    input.addEventListener('keydown', (e) => { if (e.key === 'Enter') submit(); });
    div.append(row);
    show = (correct, value) => {
      if (typeof value === 'number') input.value = String(value);
      verdict.className = `verdict ${correct ? 'right' : 'wrong'}`;
      verdict.textContent = correct ? 'Right.' : `Not quite: the answer is ${q.answer} ${q.unit || ''} (within ${q.tol}).`;
      explain.hidden = false;
    };
  } else {
    const options = element('div', 'options');
    const buttons = q.options.map((html, k) => {
      const b = element('button', '', html);
      b.addEventListener('click', () => answer(q.id, k));
      options.append(b);
      return b;
    });
    div.append(options);
    show = (correct, value) => {
      buttons.forEach((b, k) => { b.className = k === value ? `chosen ${correct === null ? 'seen' : correct ? 'right' : 'wrong'}` : ''; });
      verdict.className = `verdict ${correct === null ? '' : correct ? 'right' : 'wrong'}`;
      verdict.textContent = correct === null ? '' : correct ? 'Right.' : 'Not this one.';
      explain.hidden = false;
    };
  }
  div.append(verdict, explain);
  const explanation = explain.textContent.trim();          // (before KaTeX adds its markup: the TeX as written)
  questions.set(q.id, { q, quiz, show, explainText: () => explanation });
  return div;
}

function stepsBlock(block) {
  const section = element('section', 'steps');
  section.append(element('h3', '', escapeHtml(block.title)));
  if (block.intro) section.append(element('p', 'intro', block.intro));
  const list = element('ul');
  block.items.forEach((html) => {
    const li = element('li');
    const label = element('label');
    const box = element('input');
    box.type = 'checkbox';
    box.addEventListener('change', saveChecklist);
    label.append(box, element('span', '', html));
    li.append(label);
    list.append(li);
    checklist.push({ label: label.textContent.trim(), box });
  });
  section.append(list);
  return section;
}

function exercisesBlock(block) {
  const section = element('section', 'exercises');
  section.append(element('h3', '', 'Exercises'));
  const list = element('ol');
  for (const item of block.items) {
    const li = element('li', '', `<b>${escapeHtml(item.level)}.</b> ${item.text}`);
    if (item.answer) {
      const answerDiv = element('div', 'answer', item.answer);
      answerDiv.hidden = true;
      const button = element('button', '', 'Show the answer');
      button.addEventListener('click', () => { answerDiv.hidden = !answerDiv.hidden; button.textContent = answerDiv.hidden ? 'Show the answer' : 'Hide the answer'; });
      li.append(' ', button, answerDiv);
    }
    list.append(li);
  }
  section.append(list);
  return section;
}

let dockTaken = false;   // one lab docks: the first that asks

function labBlock(block) {
  const holder = element('div', 'lab-block');
  if (!block.available) {
    holder.append(element('p', 'note', `The lab “${escapeHtml(block.title)}” cannot run here (see the notes at the end).`));
    return holder;
  }
  const frame = element('iframe', 'lab');
  frame.title = block.title;
  frame.src = `lab/${block.index}/`;
  if (block.dock && !dockTaken) {
    dockTaken = true;
    // docked: beside the text on a wide screen, in its place on a narrow one, by CSS alone (moving an iframe reloads it)
    holder.classList.add('docked');
    holder.append(element('p', 'docked-note', `The lab “${escapeHtml(block.title)}” runs beside the text.`));
  }
  holder.append(frame);
  return holder;
}

function render(block) {
  switch (block.kind) {
    case 'html': return element('div', 'block', block.html);
    case 'check': return quizBlock(block, 'quiz check');
    case 'questions': return quizBlock(block, 'quiz group');
    case 'steps': return stepsBlock(block);
    case 'exercises': return exercisesBlock(block);
    case 'lab': return labBlock(block);
    default: return element('div', 'block');
  }
}

// ---- math, code, storage ----

function typeset(root) {
  for (const el of root.querySelectorAll('.math')) {
    if (el.dataset.typeset) continue;
    el.dataset.typeset = '1';
    const tex = el.textContent;
    try {
      katex.render(tex, el, { displayMode: el.tagName === 'DIV', throwOnError: true });
    } catch (err) {
      mathErrors += 1;
      el.classList.add('math-error');
      el.textContent = tex;
      el.title = String(err.message || err);
    }
  }
}

function addCopyButtons(root) {
  for (const pre of root.querySelectorAll('pre')) {
    const button = element('button', 'copy', 'Copy');
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(pre.querySelector('code')?.textContent ?? pre.textContent);
        button.textContent = 'Copied';
      } catch { button.textContent = 'Select and copy'; }
      setTimeout(() => { button.textContent = 'Copy'; }, 1500);
    });
    pre.append(button);
  }
}

function saveChecklist() {
  try { localStorage.setItem(storageKey, JSON.stringify(checklist.map((c) => c.box.checked))); } catch { /* storage off */ }
}

function restoreChecklist() {
  let saved = [];
  try { saved = JSON.parse(localStorage.getItem(storageKey) || '[]'); } catch { saved = []; }
  checklist.forEach((c, k) => { c.box.checked = Array.isArray(saved) && saved[k] === true; });
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

async function main() {
  const lesson = await (await fetch('lesson.json')).json();
  document.title = `${lesson.title} · physai`;
  storageKey = `physai-lesson:${lesson.key}`;
  const text = document.getElementById('text');
  text.replaceChildren(...lesson.blocks.map(render));
  const notes = document.getElementById('notes');
  for (const note of lesson.notes) notes.append(element('p', '', escapeHtml(note)));
  typeset(document.body);
  addCopyButtons(text);
  restoreChecklist();
  document.body.classList.toggle('has-dock', dockTaken);
  Object.assign(hook, {
    lesson: { title: lesson.title, key: lesson.key },
    questions: () => [...questions.values()].map(({ q }) => ({ id: q.id, kind: q.kind, options: q.kind === 'mcq' ? q.options.length : 0 })),
    answer,
    checklist: () => checklist.map(({ label, box }) => ({ label, done: box.checked })),
    check(index, done = true) {
      if (!Number.isInteger(index) || index < 0 || index >= checklist.length)
        throw new Error(`the checklist has steps 0 to ${checklist.length - 1}, got ${index}`);
      checklist[index].box.checked = Boolean(done);
      saveChecklist();
      return hook.checklist();
    },
    mathErrors: () => mathErrors,
    labs: () => [...document.querySelectorAll('iframe.lab')].filter((f) => {
      try { return f.contentWindow.lab && f.contentWindow.lab.frames > 0; } catch { return false; }
    }).length,
  });
  hook.ready = true;
}

main().catch((err) => {
  document.getElementById('text').prepend(element('p', 'note', `The lesson failed to load: ${escapeHtml(err.message || err)}`));
  throw err;
});
