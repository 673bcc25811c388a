"""Make the README's screenshot of `physai lab arm2` with the tests' headless Chromium (Debian's, never downloaded).

    uv run python scripts/lab_screenshot.py [--lab arm2] [--out docs/lab_arm2.png] [--seconds 2.4]

Serves the lab in-process on a free port, releases the arm from horizontal, advances the simulation frame by
frame through the page's test hook (so the picture does not depend on the machine's speed), and saves the page.
"""

import argparse
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from physai.lab import load_lab
from physai.lab.npm import ensure_node_modules
from physai.lab.server import make_server, serving

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from lab.browser import chromium_executable  # noqa: E402  (tests/lab/: test support, not in the wheel)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", default="arm2")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "lab_arm2.png")
    parser.add_argument("--seconds", type=float, default=2.4, help="simulated time after 'Release horizontal'")
    parser.add_argument("--press", default="Release horizontal", help="button to press first ('' for none)")
    args = parser.parse_args()
    ensure_node_modules()
    server = make_server(load_lab(args.lab), 0)
    with serving(server):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(chromium_executable()))
            page = browser.new_page(viewport={"width": 1180, "height": 600})
            page.goto(server.url)
            page.wait_for_function("window.lab !== undefined")
            page.evaluate("window.lab.ready")
            frames = page.evaluate("""([press, seconds]) => {
                lab.pause();
                if (press) lab.press(press);
                const perFrame = Math.max(1, Math.round((1 / 60) / lab.model.opt.timestep));
                let n = 0;
                while (lab.state().time < seconds) { lab.step(perFrame); n++; }
                return n;
            }""", [args.press, args.seconds])
            errors = page.evaluate("lab.errors")
            if errors:
                raise SystemExit(f"the lab reported errors: {errors}")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=False)
            browser.close()
    print(f"{args.out} ({args.out.stat().st_size // 1024} KB): {args.lab}, {frames} frames to t = {args.seconds} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
