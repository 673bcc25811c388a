"""A Trajectory in a file and back: NumPy's .npz, arrays only (read with allow_pickle=False, so a file from elsewhere
runs no code), with the model's name or MJCF path and what the viewer replays.

    save(path, fields)  -> None          # fields: the Trajectory's, plus model (str) and contacts (ContactRecord | None)
    load(path)          -> dict          # the same fields, checked: TrajectoryFileError names what is wrong

Arrays in the file: format (the text FORMAT), t (S,), q (S, nq), qd (S, nv), energy (S,) or absent, integrator, dt,
ncon (S-1,) or absent, model (text), and the contacts of each state when recorded: contact_start (S+1,) (state k's
contacts are rows contact_start[k]:contact_start[k+1]), contact_pos (K, 3), contact_frame (K, 3, 3) (rows: normal,
two tangents), contact_dist (K,), contact_force (K, 6) (MuJoCo's mj_contactForce: normal, two tangential, three
torsional/rolling components in the contact frame [N | N m]), contact_geom (K, 2); actuator_force (S, nu) (each
state's actuator forces, MuJoCo's d.actuator_force [N | N m]) when recorded.
"""

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from physai.exceptions import TrajectoryFileError

#: the file's format tag: a file without it is not a physai trajectory
FORMAT = "physai-trajectory-1"
CONTACT_ARRAYS = {"pos": (3,), "frame": (3, 3), "dist": (), "force": (6,), "geom": (2,)}


@dataclass(frozen=True)
class ContactRecord:
    """The contacts of each state of a trajectory of S states, K contacts in all: state k's are rows
    start[k]:start[k+1] of pos (K, 3) [m], frame (K, 3, 3) (rows: normal, tangents), dist (K,) [m], force (K, 6)
    (mj_contactForce, in the contact frame [N | N m]) and geom (K, 2) (MuJoCo's geom ids). start (S+1,)."""

    start: np.ndarray
    pos: np.ndarray
    frame: np.ndarray
    dist: np.ndarray
    force: np.ndarray
    geom: np.ndarray

    def at(self, k: int) -> slice:
        """The rows of state k's contacts."""
        return slice(int(self.start[k]), int(self.start[k + 1]))


def save(path, fields: dict) -> None:
    """Write the trajectory `fields` (t, q, qd, energy, integrator, dt, ncon, act, model, contacts, actuator_force) to
    `path` (.npz); TrajectoryFileError for q not (S, nq) or an actuator_force not (S, nu)."""
    if np.ndim(fields["q"]) != 2:
        raise TrajectoryFileError(f"a trajectory to save holds one run, q of shape (S, nq); got shape {np.shape(fields['q'])} "
                                  "(save each trajectory of a rollout on its own: Trajectory(t, q[n], qd[n], ...))")
    arrays = {"format": np.array(FORMAT), "model": np.array(fields.get("model") or ""), "t": fields["t"],
              "q": fields["q"], "qd": fields["qd"], "integrator": np.array(fields["integrator"]), "dt": np.array(fields["dt"])}
    force = fields.get("actuator_force")
    if force is not None and (np.ndim(force) != 2 or len(force) != len(fields["q"])):
        raise TrajectoryFileError(f"actuator_force has shape {np.shape(force)}; expected (S, nu) with S = {len(fields['q'])} "
                                  "states, as physai.recording.record_actuator_forces gives")
    arrays |= {name: fields[name] for name in ("energy", "ncon", "act", "actuator_force") if fields.get(name) is not None}
    contacts = fields.get("contacts")
    if contacts is not None:
        arrays |= {"contact_start": contacts.start} | {f"contact_{n}": getattr(contacts, n) for n in CONTACT_ARRAYS}
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def load(path) -> dict:
    """The fields of the trajectory saved at `path`; TrajectoryFileError for a file that is not one, is damaged, or holds
    arrays of the wrong shape, NaN or infinity."""
    try:
        with np.load(Path(path), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise TrajectoryFileError(f"{path}: not a readable NumPy .npz file ({exc}); expected a file written by "
                                  "Trajectory.save") from None
    if str(arrays.get("format", "")) != FORMAT:
        raise TrajectoryFileError(f"{path}: not a physai trajectory (no format tag {FORMAT!r}); expected a file written "
                                  "by Trajectory.save")
    return _checked(path, arrays)


def _array(path, arrays: dict, name: str, shape: tuple, dtype=float) -> np.ndarray:
    """arrays[name] of `shape` (None: any length) and finite, as `dtype`; TrajectoryFileError otherwise."""
    if name not in arrays:
        raise TrajectoryFileError(f"{path}: the array {name!r} is missing; expected a file written by Trajectory.save")
    x = arrays[name]
    if x.dtype.kind not in "biuf" or x.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, x.shape)):
        raise TrajectoryFileError(f"{path}: {name} has shape {x.shape} and type {x.dtype}; expected numbers of shape "
                                  f"{tuple('any' if s is None else s for s in shape)}")
    x = x.astype(dtype)
    if not np.all(np.isfinite(x)):
        raise TrajectoryFileError(f"{path}: {name} holds NaN or infinity at {np.argwhere(~np.isfinite(x))[0].tolist()}; "
                                  "expected finite numbers (a diverged run cannot be replayed past its divergence)")
    return x


def _checked(path, arrays: dict) -> dict:
    t = _array(path, arrays, "t", (None,))
    S = len(t)
    if S < 1:
        raise TrajectoryFileError(f"{path}: the trajectory holds no state; expected at least one")
    fields = {"t": t, "q": _array(path, arrays, "q", (S, None)), "qd": _array(path, arrays, "qd", (S, None)),
              "energy": _array(path, arrays, "energy", (S,)) if "energy" in arrays else None,
              "integrator": str(arrays.get("integrator", "")), "dt": float(_array(path, arrays, "dt", ())),
              "ncon": _array(path, arrays, "ncon", (S - 1,), np.intp) if "ncon" in arrays else None,
              "act": _array(path, arrays, "act", (S, None)) if "act" in arrays else None,
              "actuator_force": _array(path, arrays, "actuator_force", (S, None)) if "actuator_force" in arrays else None,
              "model": str(arrays.get("model", "")) or None, "contacts": None}
    if "contact_start" in arrays:
        start = _array(path, arrays, "contact_start", (S + 1,), np.intp)
        K = int(start[-1])
        if start[0] != 0 or np.any(np.diff(start) < 0):
            raise TrajectoryFileError(f"{path}: contact_start must rise from 0; got {start[:8].tolist()}...")
        parts = {n: _array(path, arrays, f"contact_{n}", (K, *shape), np.intp if n == "geom" else float)
                 for n, shape in CONTACT_ARRAYS.items()}
        fields["contacts"] = ContactRecord(start, **parts)
    return fields
