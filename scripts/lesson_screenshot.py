"""Make the README's screenshot of a lesson page (`physai lesson open`) with the tests' headless Chromium.

    uv run python scripts/lesson_screenshot.py [--lesson docs/lesson_example.md] [--out docs/lesson_page.png]

Serves the lesson in-process on a free port, answers its first knowledge-check question wrong and then right (so a
verdict and its typeset explanation show), steps the docked lab to 2.4 s through its test hook (the picture does not
depend on the machine's speed), scrolls to the knowledge check and saves the page.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from physai.lab.npm import ensure_node_modules
from physai.lesson_page.reader import read_lesson
from physai.lab.server import serving
from physai.lesson_page.server import make_server

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from lab.browser import chromium_executable  # noqa: E402  (tests/lab/: test support, not in the wheel)


def wait_until(page, expression: str, timeout: float = 120.0) -> None:
    """Poll `expression` in the page until true (the lesson page's CSP forbids wait_for_function's eval)."""
    deadline = time.time() + timeout
    while not page.evaluate(f"(() => Boolean({expression}))()"):
        if time.time() > deadline:
            raise SystemExit(f"{expression} still false after {timeout} s")
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", type=Path, default=REPO / "docs" / "lesson_example.md")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "lesson_page.png")
    args = parser.parse_args()
    ensure_node_modules()
    page_ = read_lesson(os.path.relpath(args.lesson))      # relative: the page names its lesson file, no machine path
    server = make_server(page_, 0)
    with serving(server):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(chromium_executable()))
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.goto(server.url)
            wait_until(page, "window.lesson && window.lesson.ready")
            first = next(q for q in page.evaluate("lesson.questions()") if q["kind"] == "mcq" and "/" in q["id"]
                         and not q["id"].startswith("Before"))
            buttons = page.locator(f'.question[data-id="{first["id"]}"] .options button')
            buttons.nth(0).click()
            buttons.nth(1).click()
            if page.evaluate("document.querySelector('iframe.lab') !== null"):
                wait_until(page, "lesson.labs() >= 1")
                lab = page.frames[1]
                lab.evaluate("""() => { lab.pause(); lab.reset(); lab.press('Release horizontal');
                    const perFrame = Math.max(1, Math.round((1 / 60) / lab.model.opt.timestep));
                    while (lab.state().time < 2.4) lab.step(perFrame); }""")
            page.locator("section.check").scroll_into_view_if_needed()
            page.evaluate("window.scrollBy(0, -90)")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
            browser.close()
    print(f"{args.out} ({args.out.stat().st_size // 1024} KB): {page_.title}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
