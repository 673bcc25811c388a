"""`physai view MODEL RUN.npz`: replay a saved physai Trajectory (Trajectory.save) in the browser, on 127.0.0.1.

MODEL: a model name or an MJCF file (a Menagerie scene.xml, to draw the floor the run stood on); "-" takes the name the
file holds. Prints the URL and opens a browser unless --no-browser; Ctrl-C stops the server. --frame T --out pic.png
renders the moment T [s] headless instead, with Debian's Chromium through Playwright (what the browser tests use);
--out run.gif renders the whole run as an animated GIF, --fps frames per second of simulated time (Pillow assembles it);
--out run.mp4 (H.264) or run.webm (VP9) the same frames as a video, encoded by the ffmpeg of the `video` extra
(imageio-ffmpeg's wheel carries it).
"""

import argparse
import contextlib
import io
import math
import subprocess
from pathlib import Path

from physai import extras
from physai.exceptions import InvalidArgumentError, LabError
from physai.integrators import Trajectory
from physai.lab.chromium import chromium_executable
from physai.lab.npm import ensure_node_modules
from physai.lab.server import port_number, serve_until_interrupted, serving
from physai.lab.viewer import make_server

#: [ms] how long the headless page may take to load the model and the run
LOAD_TIMEOUT = 120_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="a model name or an MJCF file ('-': the one the run names)")
    parser.add_argument("run", metavar="RUN.npz", help="a trajectory written by Trajectory.save")
    parser.add_argument("--port", default="8766", metavar="PORT", help="port on 127.0.0.1, 0..65535 (default 8766; 0: any)")
    parser.add_argument("--ghost", default=None, metavar="OTHER.npz", help="a second run of the model, drawn over the first")
    parser.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    parser.add_argument("--frame", type=float, default=None, metavar="T", help="with --out: the time shown [s]")
    parser.add_argument("--out", default=None, metavar="PIC.png|RUN.gif|RUN.mp4|RUN.webm",
                        help="render one moment (--frame) to a PNG, or the run to an animated GIF or a video, headless")
    parser.add_argument("--fps", type=float, default=25.0, help="with --out RUN.gif|mp4|webm: frames per simulated second (25)")
    parser.add_argument("--plot", default=None, metavar="LABEL", help="with --out: the series plotted (default: the first)")
    parser.add_argument("--size", default="1280x800", metavar="WxH", help="the picture's size in pixels (default 1280x800)")
    parser.add_argument("--verbose", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    port = port_number(args.port)
    trajectory = Trajectory.load(args.run)                  # TrajectoryFileError: exit 2
    ghost = None if args.ghost is None else Trajectory.load(args.ghost)
    model = trajectory.model if args.model == "-" else args.model
    if not model:
        raise InvalidArgumentError(f"{args.run} names no model; give MODEL (a model name or an MJCF file)")
    if args.out is not None and Path(args.out).suffix.lower() in VIDEO_CODECS:
        return video(model, trajectory, Path(args.out), args.fps, size(args.size), args.plot, ghost)
    if args.out is not None:
        return picture(model, trajectory, Path(args.out), args.frame or 0.0, size(args.size), args.plot, ghost)
    server = make_server(model, trajectory, port, quiet=not args.verbose, ghost=ghost)
    ensure_node_modules()
    print(f"physai view: {args.run} on {model} at {server.url}  (Ctrl-C stops)", flush=True)
    return serve_until_interrupted(server, not args.no_browser)


def size(text: str) -> tuple[int, int]:
    """(width, height) from "WxH"; InvalidArgumentError otherwise."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        w = h = 0
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise InvalidArgumentError(f"--size {text!r}: expected WIDTHxHEIGHT in pixels, 16 to 8192 each, e.g. 1280x800")
    return w, h


@contextlib.contextmanager
def headless_page(model, trajectory: Trajectory, wh: tuple[int, int], plot: str | None, ghost: Trajectory | None):
    """The viewer's page loaded in headless Chromium (wh: its size in pixels), its plot showing the series `plot` (None:
    the first); InvalidArgumentError for a series the run does not have, naming those it has."""
    sync_api = extras.require("playwright.sync_api", "lab", "physai view --out (with Debian's Chromium)")
    ensure_node_modules()
    with serving(make_server(model, trajectory, 0, ghost=ghost)) as server, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium_executable()))
        try:
            page = browser.new_page(viewport={"width": wh[0], "height": wh[1]})
            page.goto(server.url + "?antialias")                  # multisampled, though rendered in software
            page.wait_for_function("window.viewer && window.viewer.duration !== undefined", timeout=LOAD_TIMEOUT)
            if plot is not None and not page.evaluate("(label) => viewer.select(label)", plot):
                raise InvalidArgumentError(f"--plot {plot!r}: the run has no such series; expected one of "
                                           f"{', '.join(map(repr, page.evaluate('viewer.series()')))}")
            yield page
        finally:
            browser.close()


def picture(model, trajectory: Trajectory, out: Path, t: float, wh: tuple[int, int], plot: str | None = None,
            ghost: Trajectory | None = None) -> int:
    """The viewer at time t [s], paused, saved as the PNG `out` by headless Chromium (headless_page); 0."""
    if out.suffix.lower() != ".png":
        raise InvalidArgumentError(f"--out {out}: expected a .png file (one moment), or a .gif, .mp4 or .webm file (the run)")
    with headless_page(model, trajectory, wh, plot, ghost) as page:
        shown = page.evaluate(f"viewer.seek({float(t)}), viewer.time()")
        page.screenshot(path=str(out))
    print(f"physai view: t = {shown:.4f} s of {model} written to {out}")
    return 0


#: the run's file types (--out): None, a GIF assembled by Pillow; else ffmpeg's codec and options (one thread and
#: bitexact: the same frames give the same file)
VIDEO_CODECS = {
    ".gif": None,
    ".mp4": ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "18", "-movflags", "+faststart"],
    ".webm": ["-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p", "-crf", "32", "-b:v", "0", "-row-mt", "0"],
}


def video(model, trajectory: Trajectory, out: Path, fps: float, wh: tuple[int, int], plot: str | None = None,
          ghost: Trajectory | None = None) -> int:
    """The run as the file `out` (.gif: an animated GIF by Pillow, looping; .mp4: H.264; .webm: VP9, by the `video`
    extra's ffmpeg): the viewer at t = k / fps [s] for k = 0 .. floor(duration fps), each frame shown for 1 / fps s; 0.
    InvalidArgumentError for an fps outside (0, 100]."""
    if not (0.0 < fps <= 100.0):
        raise InvalidArgumentError(f"--fps {fps}: expected frames per second in (0, 100]")
    image = extras.require("PIL.Image", "plot", f"physai view --out RUN{out.suffix}")
    codec = VIDEO_CODECS[out.suffix.lower()]
    ffmpeg = None if codec is None else extras.require("imageio_ffmpeg", "video", f"physai view --out RUN{out.suffix}")
    frames, encoder = [], None
    with headless_page(model, trajectory, wh, plot, ghost) as page:
        duration = float(page.evaluate("viewer.duration"))
        count = math.floor(duration * fps + 1e-9) + 1
        for k in range(count):
            page.evaluate(f"viewer.seek({k / fps})")
            frame = image.open(io.BytesIO(page.screenshot())).convert("RGB")
            if codec is None:                          # the GIF is assembled at the end
                frames.append(frame)
            else:                                      # a video is encoded frame by frame
                encoder = encoder or Encoder(ffmpeg.get_ffmpeg_exe(), frame.size, fps, codec, out)
                encoder.write(frame)
    if codec is None:
        frames[0].save(out, save_all=True, append_images=frames[1:], duration=round(1000 / fps), loop=0)
    else:
        encoder.close()
    print(f"physai view: {count} frames ({duration:.4f} s at {fps:g} frames/s) of {model} written to {out}")
    return 0


class Encoder:
    """ffmpeg encoding Pillow RGB frames (one size (w, h)) into `out` at fps frames per second, frame by frame (write,
    then close), the size padded to even pixels (yuv420p needs them); LabError with ffmpeg's last words when it fails."""

    def __init__(self, ffmpeg: str, size: tuple[int, int], fps: float, codec: list[str], out: Path):
        self.out = out
        command = [ffmpeg, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{size[0]}x{size[1]}",
                   "-framerate", f"{fps:g}", "-i", "-", "-an", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", *codec,
                   "-threads", "1", "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1",
                   str(out.resolve())]                 # absolute: a name starting with '-' is no option
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE)

    def write(self, frame) -> None:
        try:
            self.process.stdin.write(frame.tobytes())
        except BrokenPipeError:
            self.close()

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        error = self.process.stderr.read()
        if self.process.wait() != 0:
            raise LabError(f"ffmpeg could not write {self.out}: {error.decode(errors='replace').strip()[-400:]}")
