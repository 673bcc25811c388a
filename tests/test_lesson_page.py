"""`physai lesson open` in Debian's headless Chromium: the four course lessons (../shared/seeds/) and physai's example
lesson open with no console error and every formula typeset; each knowledge-check question answered right and wrong
gets its verdict (numeric ones just inside and just outside tol); the checklist survives a reload; the lab of lesson
7.1 runs docked beside the text, inline on a narrow screen.

The answers expected come from the lesson text, decoded here (tests/test_lesson_reader.json_checks); the page is driven
through its test hook window.lesson and, once, by clicks.
"""

import re
import time
from contextlib import contextmanager

import pytest

from lab.browser import chromium_executable, command_url
from lab.lessons import EXAMPLE, json_checks, seed

LESSONS = {"000": lambda: seed("000"), "002": lambda: seed("002"), "003": lambda: seed("003"),
           "004": lambda: seed("004"), "example": lambda: EXAMPLE}
#: console messages that are not errors of the page: Chromium's notes on its software WebGL
HARMLESS = re.compile(r"GL Driver Message|GPU stall|WebGL")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(chromium_executable()))
        yield b
        b.close()


@contextmanager
def lesson_page(browser, path, width=1400):
    """(page, problems) for the lesson, rendered; problems collects page errors and console errors."""
    with command_url("lesson", "open", str(path)) as url:
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        problems = []
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}")
                if m.type == "error" and not HARMLESS.search(m.text) else None)
        page.goto(url)
        wait_until(page, "window.lesson && window.lesson.ready")
        try:
            yield page, problems
        finally:
            context.close()


def wait_until(page, expression: str, timeout: float = 60.0) -> None:
    """Poll `expression` in the page until it is true (page.evaluate: the page's CSP forbids the eval behind
    Playwright's wait_for_function)."""
    deadline = time.time() + timeout
    while not page.evaluate(f"(() => Boolean({expression}))()"):
        assert time.time() < deadline, f"{expression} still false after {timeout} s"
        time.sleep(0.1)


def answer(page, qid, value) -> dict:
    return page.evaluate("([id, value]) => lesson.answer(id, value)", [qid, value])


@pytest.mark.parametrize("name", list(LESSONS))
def test_lesson_opens_typeset_and_checks_answer(browser, name):
    path = LESSONS[name]()
    with lesson_page(browser, path) as (page, problems):
        assert page.evaluate("lesson.mathErrors()") == 0
        text = page.evaluate("document.getElementById('text').innerText")
        assert "$$" not in text and "\\[" not in text
        typeset = page.evaluate("document.querySelectorAll('.katex').length")
        assert typeset >= len(re.findall(r"\$\$", path.read_text(encoding="utf-8"))) // 2
        asked = {q["id"]: q for q in page.evaluate("lesson.questions()")}
        expected = {f"{c['id']}/{n}": q for c in json_checks(path.read_text(encoding="utf-8")) for n, q in enumerate(c["questions"])}
        assert set(expected) <= set(asked)
        for qid, q in expected.items():
            if q["kind"] == "mcq":
                assert asked[qid]["options"] == len(q["options"])
                right = answer(page, qid, q["answer"])
                assert right["correct"] is True and right["explanation"]
                assert answer(page, qid, (q["answer"] + 1) % len(q["options"]))["correct"] is False
            else:
                a, tol = q["answer"], q["tol"]
                for inside in (a + tol * (1 - 1e-6), a - tol * (1 - 1e-6), a):
                    assert answer(page, qid, inside)["correct"] is True, (qid, inside)
                for outside in (a + tol * (1 + 1e-6), a - tol * (1 + 1e-6)):
                    assert answer(page, qid, outside)["correct"] is False, (qid, outside)
        for qid in set(asked) - set(expected):              # a rendered lesson's groups: no verdict, the why shown
            result = answer(page, qid, 0)
            assert result["correct"] is None and result["explanation"], qid
        if name == "000":
            assert len(set(asked) - set(expected)) == 6
        assert page.evaluate("lesson.labs()") == 0 or name in ("002", "example")
        assert problems == []


@pytest.mark.parametrize("name", ["000", "example"])
def test_checklist_survives_a_reload(browser, name):
    with lesson_page(browser, LESSONS[name]()) as (page, problems):
        steps = page.evaluate("lesson.checklist()")
        assert len(steps) >= 3 and not any(s["done"] for s in steps)
        page.evaluate("lesson.check(0, true); lesson.check(2, true); lesson.check(2, false); lesson.check(1, true)")
        page.reload()
        wait_until(page, "window.lesson && window.lesson.ready")
        assert [s["done"] for s in page.evaluate("lesson.checklist()")] == [True, True] + [False] * (len(steps) - 2)
        page.locator("section.steps input[type=checkbox]").nth(2).click()      # by hand, as a learner ticks it
        page.reload()
        wait_until(page, "window.lesson && window.lesson.ready")
        assert [s["done"] for s in page.evaluate("lesson.checklist()")][:3] == [True, True, True]
        assert problems == []


def test_lesson_7_1_lab_runs_docked_and_inline_on_a_narrow_screen(browser):
    for width, docked in ((1400, True), (900, False)):
        with lesson_page(browser, seed("002"), width) as (page, problems):
            wait_until(page, "lesson.labs() === 1", 120)
            frame = page.locator("iframe.lab")
            text = page.locator("#text").bounding_box()
            box = frame.bounding_box()
            assert (box["x"] >= text["x"] + text["width"]) is docked, (width, box, text)     # beside the text
            assert frame.evaluate("f => getComputedStyle(f).position") == ("fixed" if docked else "static")
            assert page.frame_locator("iframe.lab").locator("#title").inner_text() == "The mass matrix of a swinging arm"
            lab = page.frames[1]
            assert lab.evaluate("window.lab.errors.length") == 0
            frames = lab.evaluate("window.lab.frames")
            wait_until(lab, f"window.lab.frames > {frames}")                                # it runs
            assert problems == []


#: in a lab's frame: how many readout rows and plots it has, and how many lie wholly inside the frame's viewport
IN_VIEW = """() => {
  const inside = e => { const r = e.getBoundingClientRect();
    return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight + 0.5 && r.right <= innerWidth + 0.5; };
  const rows = [...document.querySelectorAll('#readouts tr')], plots = [...document.querySelectorAll('#plots canvas')];
  return [rows.length, rows.filter(inside).length, plots.length, plots.filter(inside).length];
}"""


@pytest.mark.parametrize("width", [1400, 800])
def test_the_docked_and_the_inline_lab_show_every_readout_and_plot(browser, width):
    """Lesson 7.1's lab docked at 1400 x 900 and inline at 800 px: its readouts and its plot fit in the lab's frame
    (they were below its fold: the plot under the docked panel, 3 of 7 readouts inline)."""
    with lesson_page(browser, seed("002"), width) as (page, problems):
        wait_until(page, "lesson.labs() === 1", 120)
        lab = page.frames[1]
        wait_until(lab, "window.lab && window.lab.frames > 2", 120)
        rows, rows_seen, plots, plots_seen = lab.evaluate(IN_VIEW)
        assert rows >= 1 and plots >= 1 and (rows_seen, plots_seen) == (rows, plots), (width, rows_seen, rows, plots_seen)
        assert problems == []


def test_clicking_an_answer_shows_the_verdict_and_the_explanation(browser):
    with lesson_page(browser, EXAMPLE) as (page, problems):
        question = page.locator('.question[data-id="example-check/0"]')
        assert not question.locator(".explain").is_visible()
        question.locator(".options button").nth(0).click()
        assert question.locator(".verdict").inner_text() == "Not this one."
        question.locator(".options button").nth(1).click()
        assert question.locator(".verdict").inner_text() == "Right."
        assert question.locator(".explain .katex").count() == 1                 # its math typeset
        numeric = page.locator('.question[data-id="example-check/1"]')
        numeric.locator("input").fill("0.4862")
        numeric.locator("input").press("Enter")
        assert numeric.locator(".verdict").inner_text() == "Right."
        assert page.locator("section.check .score").inner_text() == "score 1 / 2"     # first tries: wrong, right
        answer_box = page.locator("section.exercises .answer").first
        assert not answer_box.is_visible()
        page.locator("section.exercises button").first.click()
        assert answer_box.is_visible()
        assert problems == []
