"""`physai lesson 11 check PATH`: lesson 11's Build it checks, run on the learner's own file, step by step.

    physai lesson 11 check scratch/my_dynamics.py

The file is the learner's code, imported and run as Python (as `python scratch/my_dynamics.py` would run it). It
defines what Build it writes: tree_from_mujoco(m), spatial_tree(tree, q) -> (coms, inertias, S), rnea(tree, q, qd,
qdd), mass_matrix(tree, q), forward_dynamics(tree, q, qd, tau) and energy(tree, q, qd). Each step is checked against
MuJoCo on the lesson's models (the double pendulum; the SO-101 and the Panda from Step 2 on), in order; the first step
that fails stops the run with a hint from the lesson's traps (armature left out, gravity's sign, what qfrc_inverse
holds) first, then where the results differ (e.g. "only the diagonal, by -0.028 each (= minus the armature)", computed
from the model), the state (q, qd, qdd) and both values, one row a line. A step whose function
is missing says which to write next. A result passes within 1e-9 of its scale (the lesson's own code is at 1e-15).
"""

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from physai import models
from physai.exceptions import InvalidArgumentError, PhysaiError
from physai.lessons.lesson11 import full_mass, mj_state, random_poses

#: a result passes when max |got - expected| <= RTOL max(1, max |expected|)
RTOL = 1e-9
#: the lesson's traps (Build it, "Four traps", and its Step 5), as the checker's hints
HINTS = {
    "helpers": "the lesson's code uses quat_to_mat and axis_angle_to_mat: `from physai.spatial import quat_to_mat, "
               "axis_angle_to_mat` (physai.spatial also has skew and spatial_inertia)",
    "armature": "Armature: Menagerie models add rotor inertia to M's diagonal (0.028 kg m^2 on the SO-101, 0.100 on the "
                "Panda); add np.diag(tree.armature) to M, and tree.armature * qdd to rnea's torque",
    "gravity": "Gravity's sign: RNEA takes gravity as an upward acceleration of the base, a_base = (0, -g) with "
               "g = tree.gravity = (0, 0, -9.81); with +g every gravity torque comes out reversed",
    "qfrc_inverse": "What is in qfrc_inverse: the actuators' share, qfrc_inverse = rnea - qfrc_passive - qfrc_constraint; "
                    "rnea itself is M qdd + c (no joint damping in it: the SO-101 has 0.6 N m s/rad)",
    "forward": "forward_dynamics solves M(q) qdd = tau - c(q, qd), with c = rnea(tree, q, qd, 0) (the bias: Coriolis and "
               "gravity)",
    "listing": "compare this function with the lesson's listing of the step, line by line",
}
#: what each step needs from the file
NEEDS = {1: ("tree_from_mujoco", "spatial_tree"), 2: ("rnea",), 3: ("rnea",), 4: ("mass_matrix",),
         5: ("forward_dynamics", "energy")}


class StepFailed(PhysaiError):
    """A Build it step's check failed: its message says what, where and the hint."""


def load(path) -> object:
    """The learner's module from `path` (its code runs); StepFailed naming the error when it does not import,
    InvalidArgumentError (a usage error: exit 2) when there is no such file."""
    path = Path(path)
    if not path.is_file():
        raise InvalidArgumentError(f"{path} is not a file; give the file you typed Build it into, e.g. scratch/my_dynamics.py")
    spec = importlib.util.spec_from_file_location(f"learner_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:                                     # the learner's own code: any error is theirs to see
        raise StepFailed(f"{path} does not run: {_raised(exc)}") from None
    return module


def _raised(exc: Exception) -> str:
    """An exception of the learner's code in one line, with the helpers' hint for a name the lesson imports."""
    hint = ""
    if isinstance(exc, NameError) and any(n in str(exc) for n in ("quat_to_mat", "axis_angle_to_mat", "skew", "spatial_inertia")):
        hint = f". Hint: {HINTS['helpers']}"
    return f"{type(exc).__name__}: {exc}{hint}"


def _compare(what: str, where: str, got, expected, hint: str | None = None, diagnose: Callable | None = None,
             state: dict | None = None, named: dict | None = None) -> None:
    """StepFailed unless got equals expected within RTOL of its scale. Its message: what failed and by how much, the hint
    (diagnose(got, expected)'s, else `hint`), where the two differ (entries, and which of the `named` arrays {name: array
    shaped as expected} the difference equals), the state {"q": ..., "qd": ...}, then both values, one row a line."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise StepFailed(f"{what} at {where}: expected numbers of shape {np.shape(expected)}, got {got!r}") from None
    if got.shape != np.shape(expected):
        raise StepFailed(f"{what} at {where}: expected shape {np.shape(expected)}, got {got.shape}")
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    diff = float(np.abs(got - expected).max(initial=0.0)) if np.isfinite(got).all() else np.inf
    if diff <= RTOL * scale:
        return
    hint = (diagnose(got, expected) if diagnose else None) or hint or HINTS["listing"]
    lines = [f"{what} at {where}: max difference {diff:.3g} to MuJoCo's (allowed {RTOL * scale:.1g})", f"Hint: {hint}",
             f"Where they differ: {_where(got, expected, RTOL * scale, named or {})}"]
    lines += [f"  {name:<4}= {np.array2string(np.asarray(v), precision=6, max_line_width=1000)}"
              for name, v in (state or {}).items()]
    lines += ["expected (MuJoCo):", _shown(expected), "got (yours):", _shown(got)]
    raise StepFailed("\n".join(lines))


def _shown(x: np.ndarray) -> str:
    """x printed one row a line, indented."""
    text = np.array2string(np.atleast_1d(x), precision=6, suppress_small=True, max_line_width=120)
    return "\n".join("  " + line for line in text.splitlines())


def _where(got: np.ndarray, expected: np.ndarray, tol: float, named: dict) -> str:
    """Where got and expected differ by more than tol, in words: the diagonal only, or which entries; the difference
    (got - expected) when it is the same everywhere it is not zero; and which named array, or its negative, it equals
    (e.g. "only the diagonal, by -0.028 at each dof (= minus the armature, m.dof_armature)")."""
    delta = got - expected
    if not np.isfinite(delta).all():
        return "your result holds NaN or infinity"
    off = np.abs(delta) > tol
    if got.ndim == 2 and got.shape[0] == got.shape[1] and not (off & ~np.eye(len(got), dtype=bool)).any():
        place, values = "only the diagonal", np.diag(delta)[np.diag(off)]
    else:
        index = [tuple(int(i) for i in k) if got.ndim > 1 else int(k[0]) for k in np.argwhere(off)]
        place = f"{len(index)} of {got.size} entries ({', '.join(map(str, index[:8]))}{', ...' if len(index) > 8 else ''})"
        values = delta[off]
    by = (f"by {values[0]:+.3g} each" if np.allclose(values, values[0], rtol=1e-9, atol=tol)
          else f"by {np.array2string(values, precision=3, max_line_width=1000)}")
    if np.allclose(got, -expected, atol=tol):
        return f"{place}, {by}: yours is MuJoCo's with the sign flipped"
    for name, value in named.items():
        value = np.asarray(value, dtype=float)
        for sign, word in ((1, ""), (-1, "minus ")):
            if np.abs(value).max(initial=0) > tol and np.allclose(delta, sign * value, atol=tol):
                return f"{place}, {by} (= {word}{name})"
    return f"{place}, {by}"


def _states(m: mujoco.MjModel, count: int, seed: int):
    """count random (q, qd, qdd) of a model: q as lesson11.random_poses (within limited ranges, else in [-pi, pi]);
    qd, qdd normal."""
    rng = np.random.default_rng(seed)
    return random_poses(m, count, rng), rng.normal(size=(count, m.nv)), rng.normal(size=(count, m.nv))


def _models() -> dict:
    """The lesson's models without constraints, each (m, d): the double pendulum, the SO-101, the Panda."""
    out = {}
    for name in ("double_pendulum", "robotstudio_so101", "franka_emika_panda"):
        m = models.load(name)
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        out[name] = (m, mujoco.MjData(m))
    return out


def _forward(m, d, q, qd=None, qdd=None):
    """d after mj_forward at (q, qd) with no applied forces (lesson11.mj_state), then mj_inverse for qdd if given."""
    mj_state(m, d, q, qd)
    if qdd is not None:
        d.qacc[:] = qdd
        mujoco.mj_inverse(m, d)
    return d


def step1(f, ms, out) -> None:
    m, d = ms["double_pendulum"]
    tree = f.tree_from_mujoco(m)
    for k, q in enumerate(_states(m, 50, 1)[0]):
        coms = f.spatial_tree(tree, q)[0]
        _compare("Step 1: the centres of mass of spatial_tree", f"double pendulum pose {k}", np.array(coms),
                 _forward(m, d, q).xipos[1:], state={"q": q})
    out("Step 1 passes: the body tree's centres of mass equal MuJoCo's xipos (double pendulum, 50 poses)")


def step2(f, ms, out) -> None:
    for name in ("double_pendulum", "robotstudio_so101"):
        m, d = ms[name]
        tree = f.tree_from_mujoco(m)
        for k, (q, qd, qdd) in enumerate(zip(*_states(m, 30, 2))):
            tau = f.rnea(tree, q, qd, qdd)
            gravity = _forward(m, d, q).qfrc_bias.copy()
            _forward(m, d, q, qd, qdd)
            inverse, passive = d.qfrc_inverse.copy(), d.qfrc_passive.copy()

            def diagnose(got, expected, inverse=inverse, passive=passive, qdd=qdd, tree=tree, gravity=gravity):
                near = lambda a, b: np.allclose(a, b, atol=1e-9 * max(1.0, np.abs(b).max()))    # noqa: E731
                if np.abs(passive).max() > 0 and near(got, inverse):
                    return HINTS["qfrc_inverse"]
                if near(got + np.asarray(tree.armature) * qdd, expected):
                    return HINTS["armature"]
                if np.abs(gravity).max() > 0 and near(got + 2 * gravity, expected):
                    return HINTS["gravity"]
                return None
            _compare("Step 2: rnea", f"{name} state {k}", tau, inverse + passive, diagnose=diagnose,
                     state={"q": q, "qd": qd, "qdd": qdd},
                     named={"the armature times qdd, m.dof_armature * qdd": np.asarray(tree.armature) * qdd,
                            "twice the gravity torque": 2 * gravity, "qfrc_passive": passive})
    out("Step 2 passes: rnea equals MuJoCo's qfrc_inverse + qfrc_passive (double pendulum and SO-101, 30 states each)")


def step3(f, ms, out) -> None:
    for name in ("double_pendulum", "robotstudio_so101"):
        m, d = ms[name]
        tree = f.tree_from_mujoco(m)
        for k, (q, qd, _) in enumerate(zip(*_states(m, 20, 3))):
            zero = np.zeros(m.nv)
            g = f.rnea(tree, q, zero, zero)
            expected_g = _forward(m, d, q).qfrc_bias.copy()
            _compare("Step 3: gravity rnea(tree, q, 0, 0)", f"{name} pose {k}", g, expected_g,
                     diagnose=lambda got, exp: HINTS["gravity"] if np.allclose(got, -exp, atol=1e-9 * max(1, np.abs(exp).max())) else None,
                     state={"q": q})
            _compare("Step 3: the bias rnea(tree, q, qd, 0)", f"{name} state {k}", f.rnea(tree, q, qd, zero),
                     _forward(m, d, q, qd).qfrc_bias.copy(), state={"q": q, "qd": qd})
    out("Step 3 passes: the bias and gravity equal MuJoCo's qfrc_bias (double pendulum and SO-101, 20 states each)")


def step4(f, ms, out) -> None:
    for name in ("double_pendulum", "robotstudio_so101", "franka_emika_panda"):
        m, d = ms[name]
        tree = f.tree_from_mujoco(m)
        for k, q in enumerate(_states(m, 10, 4)[0]):
            M = full_mass(m, _forward(m, d, q))
            armature = m.dof_armature.copy()

            def diagnose(got, expected, armature=armature):
                missing = expected - got
                if np.abs(armature).max() > 0 and np.allclose(missing, np.diag(armature), atol=1e-9 * max(1, np.abs(expected).max())):
                    return HINTS["armature"]
                return None
            _compare("Step 4: mass_matrix", f"{name} pose {k}", f.mass_matrix(tree, q), M, diagnose=diagnose,
                     state={"q": q}, named={"the armature, m.dof_armature": np.diag(armature)})
    out("Step 4 passes: mass_matrix equals MuJoCo's mj_fullM (double pendulum, SO-101, Panda, 10 poses each)")


def step5(f, ms, out) -> None:
    m, d = ms["double_pendulum"]
    tree = f.tree_from_mujoco(m)
    for k, (q, qd, _) in enumerate(zip(*_states(m, 20, 5))):
        _compare("Step 5: forward_dynamics(tree, q, qd, 0)", f"double pendulum state {k}",
                 f.forward_dynamics(tree, q, qd, np.zeros(m.nv)), _forward(m, d, q, qd).qacc.copy(), hint=HINTS["forward"],
                 state={"q": q, "qd": qd})
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    try:
        q, qd, h = np.array([np.pi / 2, 0.0]), np.zeros(2), m.opt.timestep
        _forward(m, d, q, qd)
        for step in range(1, 501):                           # 1 s of semi-implicit Euler against mj_step
            qd = qd + h * np.asarray(f.forward_dynamics(tree, q, qd, np.zeros(m.nv)), dtype=float)
            q = q + h * qd
            mujoco.mj_step(m, d)
            if step % 100 == 0:
                _compare("Step 5: semi-implicit Euler with your forward_dynamics, q", f"step {step} (t = {step * h:g} s) "
                         "from the horizontal arm at rest", q, d.qpos.copy(), hint=HINTS["forward"])
        mujoco.mj_forward(m, d)                               # d.energy of the final state
        _compare("Step 5: energy", f"the final state (t = {500 * h:g} s)", f.energy(tree, d.qpos.copy(), d.qvel.copy()),
                 float(d.energy.sum()))
    finally:
        m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    out("Step 5 passes: forward_dynamics equals MuJoCo's qacc, your semi-implicit Euler follows mj_step for 1 s, and "
        "energy equals MuJoCo's")


STEPS = (step1, step2, step3, step4, step5)


def check_file(path, out: Callable[[str], None] = print) -> int:
    """Run Build it's checks on the learner's file, step by step; 0 when all five pass, 1 at the first that fails
    (its message printed: what was expected, what came back, where, and a hint)."""
    try:
        f = load(path)
        ms = _models()
        for number, step in enumerate(STEPS, start=1):
            missing = [name for name in NEEDS[number] if not callable(getattr(f, name, None))]
            if missing:
                out(f"Step {number} needs {', '.join(f'{n}()' for n in missing)} in {path}: type it in from lesson 11's "
                    f"Build it, Step {number}, and run this again")
                return 1
            try:
                step(f, ms, out)
            except StepFailed:
                raise
            except Exception as exc:                             # raised inside the learner's functions
                raise StepFailed(f"Step {number}: your code raised {_raised(exc)}") from None
    except StepFailed as exc:
        out(str(exc))
        return 1
    out("All five steps pass: your dynamics equal MuJoCo's.")
    return 0


if __name__ == "__main__":                                     # python -m physai.lessons.check11 PATH
    raise SystemExit(check_file(sys.argv[1]) if len(sys.argv) == 2 else 2)
