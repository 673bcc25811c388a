"""The lessons' listings as printed (tests/listings/: 7.1, 7.2 with MJC_FAST=1, and 6.2's worked example) run in a
subprocess, exit 0, and print numbers that agree, to their printed precision, with the same quantities computed here
with MuJoCo or NumPy; machine-precision residuals are checked against bounds. Cross-checks against the lessons' text
(../shared/seeds/) are labelled as such."""

import ast
import os
import re
import runpy
import subprocess
import sys
from functools import cache
from pathlib import Path

import mujoco
import numpy as np
import pytest

from mjcourse import model_path

from lab.lessons import SEEDS   # tests/lab/: test support

ROOT = Path(__file__).resolve().parents[1]
LISTINGS = ROOT / "tests" / "listings"
TIMEOUT = 300             # [s] per run; each takes about a second (MJC_FAST=1 for 7.1 and 7.2)
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")
INVDISCRETE = int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
EXTRACTION = "# reconstructed: the lesson's extraction begins below this line"   # 7.2's marker (inside BOX)

# listing -> (seed file, the text its code starts with in the seed, the text that follows its code)
LESSON = {
    "l7_1_equations_of_motion": ("002_a2b409b8a8dc6aeb.txt", "“\"”Lesson 7.1:", "\nOutput:"),
    "l7_2_inverse_dynamics": ("003_d50b4faaac521434.txt", None, "\nOutput:"),
    "l6_2_manipulator_equation": ("004_f385edd1b0e306eb.txt", "import numpy as np", "\n\nRunning this prints"),
}


@cache
def run(name: str) -> str:
    """The listing's stdout; it exits 0."""
    env = {**os.environ, **({"MJC_FAST": "1"} if name.startswith("l7_") else {})}
    got = subprocess.run([sys.executable, str(LISTINGS / f"{name}.py")], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert got.returncode == 0, f"{name} exited {got.returncode}:\n{got.stderr}"
    return got.stdout


def find(pattern: str, out: str) -> re.Match:
    match = re.search(pattern, out, re.MULTILINE)
    assert match, f"no line matches {pattern!r} in:\n{out}"
    return match


def agrees(printed, value, decimals: int | None = None) -> bool:
    """`printed` (a formatted number, or a list of them) is `value` rounded: within half a unit of its last printed digit
    (`decimals` after the point, or as many as the text shows), plus a hair for the rounding of `value` itself."""
    if isinstance(printed, (list, tuple, np.ndarray)):
        return all(agrees(p, v, decimals) for p, v in zip(np.ravel(printed), np.ravel(value)))
    text = str(printed).lower()
    mantissa, _, exponent = text.partition("e")
    places = len(mantissa.partition(".")[2]) if decimals is None else decimals
    unit = 10.0 ** (int(exponent or 0) - places)
    return abs(float(text) - float(value)) <= 0.5 * unit * (1 + 1e-9) + 1e-12 * abs(float(value))


def array(text: str) -> np.ndarray:
    """A NumPy-printed 1-D array, '[-0.03  0.04]'."""
    return np.array([float(x) for x in text.strip("[] ").split()])


def full_mass(model, data) -> np.ndarray:
    m = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, m)
    return m


# ---- lesson 7.1 ----


def test_l7_1_two_link_arm_against_mujoco():
    out = run("l7_1_equations_of_motion")
    model = mujoco.MjModel.from_xml_path(str(model_path("arm2")))
    data = mujoco.MjData(model)
    assert "  200 random states (q in range, qdot ~ N(0, 3 rad/s)):" in out      # MJC_FAST=1: N = 200
    line = find(r"max \|mj_fullM - M\(q\)\| = (\S+) kg m\^2 with the inertias as written in the XML, (\S+) with the exact", out)
    assert float(line[1]) < 1e-12                                                # the Lagrangian is MuJoCo's M exactly
    # The XML rounds the thin-rod inertias m L^2 / 12: M(q) - M_rod(q) = [[dI1 + dI2, dI2], [dI2, dI2]] at every q.
    d_i = [model.body_inertia[b, 1] - model.body_mass[b] * (2 * model.geom_size[model.body_geomadr[b], 1]) ** 2 / 12
           for b in (1, 2)]
    assert agrees(line[2], max(abs(d_i[0] + d_i[1]), abs(d_i[1])))
    assert float(find(r"max \|qfrc_bias - c\(q, qdot\) - g\(q\)\| = (\S+) N m", out)[1]) < 1e-12
    for pose, label in (((0.0, 0.0), r"\(0, 0\)"), ((0.0, np.pi / 2), r"\(0, pi/2\)")):
        data.qpos[:] = pose
        mujoco.mj_forward(model, data)
        printed = ast.literal_eval(find(rf"^  M at q = {label}: (\[\[.*?\]\]) kg m\^2", out)[1])
        assert agrees(printed, full_mass(model, data), decimals=5), pose


def test_l7_1_armature_and_damping_against_mujoco():
    out = run("l7_1_equations_of_motion")
    model = mujoco.MjModel.from_xml_path(str(model_path("arm2")))
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = [0.3, -0.8], [1.5, -2.0]
    mujoco.mj_forward(model, data)
    bare = full_mass(model, data)
    model.dof_armature[:] = 0.1
    mujoco.mj_forward(model, data)
    change = ast.literal_eval(find(r"on both joints: M changes by (\[\[.*?\]\])$", out)[1])
    assert agrees(change, full_mass(model, data) - bare, decimals=6)
    line = find(r"qfrc_passive = (\[.*?\]) N m; -damping \* qvel = (\[.*?\]) N m \(damping is not part of qfrc_bias\)", out)
    assert agrees(array(line[1]), data.qfrc_passive, decimals=6)
    assert agrees(array(line[2]), -model.dof_damping * data.qvel, decimals=6)


def test_l7_1_balance_energy_and_spectrum_against_mujoco():
    out = run("l7_1_equations_of_motion")
    line = find(r"^  (\d+) random states, controls and applied forces: max .* = (\S+) N m$", out)
    assert line[1] == "200" and float(line[2]) < 1e-10                           # torques up to 80 N m
    model = mujoco.MjModel.from_xml_path(str(model_path("arm7")))
    model.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    data = mujoco.MjData(model)
    data.qpos[:] = model.key_qpos[model.key("home").id]
    data.qvel[:] = np.random.default_rng(2).normal(size=model.nv)
    mujoco.mj_forward(model, data)
    line = find(r"1/2 qdot\^T M qdot = (\S+) J, MuJoCo energy\[1\] = (\S+) J", out)
    assert agrees(line[1], 0.5 * data.qvel @ full_mass(model, data) @ data.qvel) and agrees(line[2], data.energy[1])
    for armature in (0.05, 0.0):
        model.dof_armature[:] = armature
        mujoco.mj_forward(model, data)
        eig = np.linalg.eigvalsh(full_mass(model, data))
        line = find(rf"^  armature {armature:<4}: M symmetric (\S+), eigenvalues from (\S+) to (\S+) kg m\^2, condition number (\d+)$",
                    out)
        assert line[1] == "True" and np.allclose(full_mass(model, data), full_mass(model, data).T)
        assert agrees(line[2], eig[0]) and agrees(line[3], eig[-1]) and agrees(line[4], eig[-1] / eig[0], decimals=0)


# ---- lesson 7.2 ----


def test_l7_2_inverse_undoes_forward():
    out = run("l7_2_inverse_dynamics")
    line = find(r"^  (\d+) random states: max \|qfrc_inverse - \(qfrc_actuator \+ qfrc_applied\)\| = (\S+) N m$", out)
    assert line[1] == "200" and float(line[2]) < 1e-10                           # MJC_FAST=1; torques up to 80 N m
    assert float(find(r"qfrc_passive - qfrc_constraint: max difference (\S+) N m$", out)[1]) < 1e-12


def consistent_torques(model) -> np.ndarray:
    """arm7's torques for the 2 s minimum-jerk motion home -> home + step, sampled at the timestep, with the central
    second difference of the samples as acceleration (the motion starts at rest: q_-1 = q_0) and invdiscrete."""
    h = model.opt.timestep
    n = round(2.0 / h)
    s = np.clip(np.arange(-1, n + 1) * h / 2.0, 0.0, 1.0)[:, None]
    home = model.key_qpos[model.key("home").id]
    q = home + np.array([0.6, -0.3, 0.4, -0.5, 0.5, 0.4, 0.8]) * (10 * s**3 - 15 * s**4 + 6 * s**5)   # q_-1 .. q_n
    model.opt.enableflags |= INVDISCRETE
    data = mujoco.MjData(model)
    tau = np.zeros((n, model.nv))
    for k in range(n):
        data.qpos[:] = q[k + 1]
        data.qvel[:] = (q[k + 1] - q[k]) / h
        data.qacc[:] = (q[k + 2] - 2 * q[k + 1] + q[k]) / h**2
        mujoco.mj_inverse(model, data)
        tau[k] = data.qfrc_inverse
    model.opt.enableflags &= ~INVDISCRETE
    return tau


def test_l7_2_torques_replay_exactly_only_when_consistent():
    out = run("l7_2_inverse_dynamics")
    model = mujoco.MjModel.from_xml_path(str(model_path("arm7")))
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    assert find(r"^  motion: home to home \+ \[.*\] rad in (\S+) s, Euler, h = (\S+) s$", out).groups() == ("2.0", f"{model.opt.timestep}")
    rows = re.findall(r"^  (analytic|integrator-consistent)\s+invdiscrete (True|False)\s*: "
                      r"max joint error at 0\.5 s (\S+), 1 s (\S+), 2 s (\S+) rad$", out, re.MULTILINE)
    assert [row[:2] for row in rows] == [("analytic", "False"), ("analytic", "True"), ("integrator-consistent", "False"),
                                         ("integrator-consistent", "True")]
    for accel, inv, *errors in rows:
        e05, e1, e2 = map(float, errors)
        if (accel, inv) == ("integrator-consistent", "True"):
            assert max(e05, e1, e2) < 1e-12, errors                             # exact replay
        else:
            assert e05 > 1e-5 and e1 > e05 and e2 > 2 * e1, (accel, inv, errors)  # open-loop errors compound
    tau = consistent_torques(model)
    ratio = np.max(np.abs(tau) / model.actuator_ctrlrange[:, 1])
    assert ratio < 1                                                             # no clamping
    assert agrees(find(r"largest torque over the motion / motor limit: (\S+)$", out)[1], ratio)
    for name in ("implicitfast", "implicit"):
        error = find(rf"^  {name}\s+integrator-consistent, invdiscrete True: max joint error over 2 s (\S+) rad$", out)[1]
        assert float(error) < 1e-12, name
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    model.opt.enableflags |= INVDISCRETE
    with pytest.raises(mujoco.FatalError) as refused:
        mujoco.mj_inverse(model, mujoco.MjData(model))
    assert f"\n  rk4           mj_inverse with invdiscrete raises: {refused.value}\n" in out


def test_l7_2_box_holding_forces_against_mj_inverse():
    out = run("l7_2_inverse_dynamics")
    box = runpy.run_path(str(LISTINGS / "l7_2_inverse_dynamics.py"))["BOX"]      # the listing's model, not its __main__
    rows = re.findall(r"^  solref time constant (\S+) s \(rests (\S+) mm deep\): (.*)$", out, re.MULTILINE)
    assert [row[0] for row in rows] == ["0.02", "0.005"]
    depths, forces = [], []
    for tc, depth, row in rows:
        model = mujoco.MjModel.from_xml_string(box.format(tc=tc))
        data = mujoco.MjData(model)
        for _ in range(2000):
            mujoco.mj_step(model, data)
        rest = data.qpos[2]
        assert agrees(depth, 1000 * (model.geom_size[1, 2] - rest))              # half-height minus the centre's height
        printed = re.findall(r"([-+]\d+\.\d) mm:\s+([-+]\d+\.\d+) N", row)
        assert [p[0] for p in printed] == ["+1.0", "+0.0", "-0.2", "-0.5", "-1.0"]
        for dz, force in printed:
            probe = mujoco.MjData(model)
            probe.qpos[:] = data.qpos
            probe.qpos[2] = rest + float(dz) / 1000
            mujoco.mj_inverse(model, probe)                                      # qvel = qacc = 0
            assert agrees(force, probe.qfrc_inverse[2]), (tc, dz)
        weight = model.body_mass[1] * -model.opt.gravity[2]
        assert agrees(printed[0][1], weight) and abs(float(printed[1][1])) < 0.005   # in the air: m g; at rest: 0
        f = [float(p[1]) for p in printed[2:]]
        assert 0 > f[0] > f[1] > f[2]                                            # pushes back harder the deeper it is
        depths.append(float(depth))
        forces.append(f)
    assert depths[1] < depths[0] and all(abs(b) > abs(a) for a, b in zip(*forces))   # the stiffer contact
    mu = model.geom_friction[:, 0].max()
    assert f"above its {mu * weight:.2f} N friction limit" in out
    line = find(r"\(mjENBL_FWDINV\) stays at most (\S+) in qfrc and (\S+) in constraint force$", out)
    assert float(line[1]) < 1e-9 and float(line[2]) < 1e-6                       # the latter: the solver's tolerance


# ---- lesson 6.2 ----


def test_l6_2_manipulator_equation_properties():
    out = run("l6_2_manipulator_equation")
    printed = dict(line.split(":", 1) for line in out.splitlines())
    printed = {key.strip(): value.strip() for key, value in printed.items()}
    # the same arm, in the test's own terms: point masses at the link tips, M = sum m J^T J, g = dV/dq
    m1, m2, l1, l2, g0 = 1.5, 1.0, 0.5, 0.4, 9.81
    q, dq, tau = np.array([0.4, -0.7]), np.array([1.2, 0.9]), np.array([2.0, 0.5])
    s1, c1, s12, c12 = np.sin(q[0]), np.cos(q[0]), np.sin(q.sum()), np.cos(q.sum())
    j1 = np.array([[-l1 * s1, 0.0], [l1 * c1, 0.0]])
    j2 = np.array([[-l1 * s1 - l2 * s12, -l2 * s12], [l1 * c1 + l2 * c12, l2 * c12]])
    M = m1 * j1.T @ j1 + m2 * j2.T @ j2
    g = g0 * (m1 * j1[1] + m2 * j2[1])
    h = m2 * l1 * l2 * np.sin(q[1])
    bias = np.array([-h * (2 * dq[0] * dq[1] + dq[1] ** 2), h * dq[0] ** 2])     # Coriolis and centrifugal (lesson 7.1)
    assert printed["M symmetric"] == "True"
    assert np.allclose(np.sort(array(printed["M eigvals"])), np.linalg.eigvalsh(M), rtol=0, atol=1e-8)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    assert np.allclose(array(printed["gravity hold torque tau = g(q)"]), g, rtol=0, atol=1e-8)
    ddq = np.linalg.solve(M, tau - bias - g)
    assert np.allclose(array(printed["forward-dynamics ddq"]), ddq, rtol=0, atol=1e-8)
    back = printed["inverse-dynamics tau"]
    assert back.endswith("(matches input)") and np.allclose(array(back.removesuffix("(matches input)")), tau, rtol=0, atol=1e-8)
    assert printed["skew-symmetric (S = -S^T)"] == "True"
    assert abs(float(printed["passivity dq^T S dq ~ 0"])) < 1e-12


# ---- cross-checks against the lessons' text (../shared/seeds/, beside the checkout) ----


def seed(name: str) -> str:
    path = SEEDS / LESSON[name][0]
    assert path.is_file(), f"{path} not found (the shared folder beside the checkout)"
    return path.read_text(encoding="utf-8")


def published_output(name: str) -> list[str]:
    """The lesson's Output block: the lines after ```text up to the first blank line."""
    block = seed(name).split("\nOutput:", 1)[1].split("```text\n", 1)[1]
    return block.split("\n\n", 1)[0].splitlines()


def masked(line: str) -> str:
    return re.sub(r"\s+", " ", NUMBER.sub("#", line)).strip()


@pytest.mark.parametrize("name", ["l7_1_equations_of_motion", "l7_2_inverse_dynamics"])
def test_cross_check_printed_lines_are_the_published_ones(name):
    """Cross-check: the listing prints the lesson's Output block line for line, numbers aside."""
    got = run(name).splitlines()
    assert [masked(line) for line in got] == [masked(line) for line in published_output(name)]


def test_cross_check_published_numbers_of_the_lessons_models():
    """Cross-check: where the listing runs the lesson's own model (arm2, the box), it prints the published line."""
    for name, prefixes in (("l7_1_equations_of_motion", ("  M at q = ", "  armature 0.1 kg m^2", "  qfrc_passive = ")),
                           ("l7_2_inverse_dynamics", ("  solref time constant ", "  rk4 "))):
        got = [line for line in run(name).splitlines() if line.startswith(prefixes)]
        assert got and got == [line for line in published_output(name) if line.startswith(prefixes)], name


def code(text: str) -> str:
    """Listing text with the extraction's damage made moot: curly quotes straight, no `**`, no whitespace, and
    `__name__ == "__main__"` as the extraction has it."""
    for old, new in (("“", '"'), ("”", '"'), ("‘", "'"), ("’", "'"), ("**", ""), ("__name__", "name"), ('"__main__"', '"main"')):
        text = text.replace(old, new)
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("name", list(LESSON))
def test_cross_check_listings_are_typed_as_printed(name):
    """Cross-check: the listing's code is the lesson's, token for token, up to the extraction's damage; the header
    comment, 7.2's reconstructed top (above its marker) and the `# noqa` comments are ours."""
    text, start, end = seed(name), LESSON[name][1], LESSON[name][2]
    printed = (text[text.index(start):] if start else text).split(end, 1)[0]
    lines = (LISTINGS / f"{name}.py").read_text(encoding="utf-8").splitlines()
    first = (next(i for i, line in enumerate(lines) if EXTRACTION in line) + 1 if name == "l7_2_inverse_dynamics"
             else next(i for i, line in enumerate(lines) if not line.startswith("#")))
    typed = "\n".join(re.sub(r"  # noqa: \S+$", "", line) for line in lines[first:])
    assert code(typed) == code(printed)
