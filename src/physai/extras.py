"""Optional dependencies by need. The core (physai.engine, physai.dynamics, the integrators) needs numpy, mujoco,
defusedxml and mujoco-menagerie (robots by name) alone; the rest are extras of the physai package:

    lab       physai lab and physai lesson open: Node for the page's npm packages, the lesson's Markdown reader
    plot      matplotlib, for the lessons' and examples' figures
    dask      physai.engine.map_states over Dask arrays, on one machine or a distributed cluster
    examples  what examples/ and experiments/ import (plot, dask, zarr, scipy)
    all       every extra

Modules of an extra are imported when a feature first needs them, through require(), which names the extra to
install when one is missing. The repository's own environment (uv sync, uv run) installs them all.
"""

import importlib
from types import ModuleType

from physai.exceptions import MissingExtraError


def require(module: str, extra: str, feature: str) -> ModuleType:
    """The module `module` (dotted name), imported; MissingExtraError naming `extra` when it is not installed.

    feature: what needs it, for the message, e.g. "physai lab" -> "physai lab needs the lab extra: pip install 'physai[lab]'".
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:                         # the module, or a package it needs, is not installed
        raise MissingExtraError(f"{feature} needs the {extra} extra: pip install 'physai[{extra}]' "
                                f"(no module named {exc.name or module!r})") from None
