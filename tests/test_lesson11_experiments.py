"""Lesson 11's scripts (experiments/11-rigid-body-dynamics): their functions run here and are checked against
live MuJoCo; the energy-drift monitor; `physai lesson 11 ...` from another working directory.

Residuals are asserted numerically against the scripts' BOUNDS, the bounds their saved outputs print (a few eps
times each quantity's scale, with 10 to 100 times margin over the worst value seen on the kernels tried), the energy
table against MuJoCo run here. build_output.txt, output.txt and output_physai.txt are what `physai lesson 11` prints for
the learner, so they are compared with the rerun, portably (helpers.assert_same_text: the same words, each number within
one unit of its last printed digit), never digit by digit. Elsewhere machine precision means 1e-12 absolute.
"""

import functools
import io
import importlib.util
import math
import warnings

import mujoco
import numpy as np
import pytest

from physai import cli, models
from physai import dynamics as dyn
from physai import integrators
from physai.energy_drift import EnergyDriftWarning, EnergyMonitor, check_energy_drift
from physai.exceptions import InvalidArgumentError, ShapeError
from physai.lessons import Transcript, lesson_dir
from physai.lessons import lesson11 as L
from helpers import assert_same_text

TOL = 1e-12
FOLDER = lesson_dir(11)


def load_script(name: str):
    """A lesson script as a module, without running its main()."""
    spec = importlib.util.spec_from_file_location(f"lesson11_{name}", FOLDER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def script_run(name: str) -> tuple[dict, str]:
    """A lesson script's run(), once per session: its numbers and the text it prints."""
    out = Transcript(echo=False)
    return load_script(name).run(out), out.text()


@pytest.fixture(scope="module")
def build():
    return script_run("build")[0]


@pytest.fixture(scope="module")
def experiment():
    return script_run("experiment")[0]


# ---- build.py: every check at machine precision ----

def test_build_checks_are_at_machine_precision(build):
    B = load_script("build").BOUNDS
    assert build["step1"] < B["com"]                               # centres of mass vs xipos [m]
    assert max(build["step2"]) < B["rnea"]                         # rnea vs mj_inverse and the hand formula [N m]
    step3 = build["step3"]
    assert step3["pendulum"] < B["bias"]
    for label, value in step3.items():
        if label != "pendulum":
            assert value[1] < B["so101_gravity"], label            # SO-101 g(q) vs qfrc_bias
    step4 = build["step4"]
    assert max(step4["pendulum"]) < B["mass"] and step4["SO-101"] < B["so101_mass"]
    assert step4["Panda"] < B["panda_mass"]                        # M entries up to a few kg m^2
    step5 = build["step5"]
    assert step5["dq"] < B["trajectory"]                           # physai's Euler vs mj_step after 5000 steps [rad]
    # MuJoCo's readings belong to the state at the start of each step: each equals ours one step earlier
    assert step5["readings"] < B["energy_readings"]
    assert step5["ours"].drift[-2] == pytest.approx(step5["mj"].final, abs=1e-9)
    assert step5["ours"].peak == pytest.approx(step5["mj"].peak, abs=1e-9)


def test_build_saved_output_is_reproduced():
    """build_output.txt, the lesson's printed build steps (residuals printed as bounds), is what a rerun prints."""
    assert_same_text((FOLDER / "build_output.txt").read_text(encoding="utf-8"), script_run("build")[1], "build_output.txt")


def test_experiment_saved_output_is_reproduced():
    """output.txt, the lesson's energy table and its observations, is what a rerun prints."""
    assert_same_text((FOLDER / "output.txt").read_text(encoding="utf-8"), script_run("experiment")[1], "output.txt")


def test_physai_energy_table_saved_output_is_reproduced(experiment):
    """output_physai.txt, written by the default run: physai's simulator beside MuJoCo's energy table (0.1 s on the
    compiled backend), what a rerun prints, each physai source within AGREEMENT of MuJoCo's readings."""
    script = load_script("experiment")
    out = Transcript(echo=False)
    _, agreement = script.physai_table(out, models.load("double_pendulum"), experiment["table"])
    assert_same_text((FOLDER / "output_physai.txt").read_text(encoding="utf-8"), out.text(), "output_physai.txt")
    for label, bounds in script.AGREEMENT.items():
        assert all(w < b for w, b in zip(agreement[label], bounds, strict=True)), label


def test_build_panda_home_against_mj_fullM(build):
    m = models.load("franka_emika_panda")
    d = mujoco.MjData(m)
    d.qpos[:] = m.key("home").qpos
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    np.testing.assert_allclose(build["step4"]["panda_diag"], np.diag(M)[:7], rtol=0, atol=TOL * 10)
    assert build["step4"]["panda_cond"] == pytest.approx(np.linalg.cond(M[:7, :7]), rel=1e-9)


# ---- experiment.py ----

def test_result1_is_at_machine_precision(experiment):
    err, B = experiment["result1"], load_script("experiment").BOUNDS
    for key in ("M", "bias", "inverse", "forward"):                # forward: accelerations up to 20 rad/s^2
        assert err[key] < B[key], key


def mujoco_cell(integrator: int, timestep: float, duration: float = 10.0) -> tuple[float, float]:
    """(peak, final) energy error in % of the releasable energy, straight from MuJoCo, without physai.lessons."""
    m = models.load("double_pendulum")
    d = mujoco.MjData(m)

    def potential(q):
        d.qpos[:], d.qvel[:] = q, 0.0
        mujoco.mj_forward(m, d)
        return d.energy[0]

    releasable = potential([0.0, 0.0]) - potential([np.pi / 2, 0.0])   # horizontal minus hanging straight down
    m.opt.integrator, m.opt.timestep = integrator, timestep
    mujoco.mj_resetData(m, d)
    mujoco.mj_forward(m, d)
    e0, drift = d.energy.sum(), []
    for _ in range(round(duration / timestep)):
        mujoco.mj_step(m, d)
        drift.append((d.energy.sum() - e0) / releasable * 100)
    return max(map(abs, drift)), drift[-1]


@pytest.mark.parametrize("name", ["Euler", "RK4", "implicit"])
def test_energy_table_2ms_column_matches_mujoco(experiment, name):
    table = experiment["table"]
    peak, final = mujoco_cell(int(L.INTEGRATORS[name]), 0.002)
    cell = table.cell(name, 0.002)
    assert cell.peak == pytest.approx(peak, abs=1e-9)             # the scale differs in its last bits (physai's
    assert cell.final == pytest.approx(final, abs=1e-9)           # potential energy vs MuJoCo's): no text comparison


def test_energy_table_published_cross_check(experiment):
    """Labeled cross-check only: the lesson's published numbers (Result 2, Break it), to their printed 3 decimals;
    live MuJoCo (above) is what counts."""
    table, half = experiment["table"], 5e-4                          # half a unit in the lesson's last printed digit
    for name, dt, peak, final in (("Euler", 0.002, 14.357, 14.355),  # the lesson's published numbers
                                  ("implicit", 0.002, 11.352, -11.352),
                                  ("Euler", 0.02, 140.049, 124.182)):
        cell = table.cell(name, dt)
        assert abs(cell.peak - peak) <= half and abs(cell.final - final) <= half, (name, dt)
    assert abs(table.scale - 4.660) <= half                          # the lesson's published number


def test_energy_table_observations(experiment):
    table = experiment["table"]
    assert table.identical("Euler", "implicitfast")
    for name in ("Euler", "implicit"):                               # first order: halving dt halves the error
        for dt, _, ratio in table.halving_ratios(name):
            if dt < 0.002:
                assert 1.8 < ratio < 2.2, (name, dt, ratio)


def test_energy_table_is_deterministic(experiment):
    """The same call with the same inputs on the same machine: bit-identical (a real property, also printed)."""
    assert experiment["deterministic"]
    m = models.load("double_pendulum")
    again = load_script("experiment").energy_table(m)
    assert again.format() == experiment["table"].format()
    assert again.format(sources_as="columns") == experiment["table"].format(sources_as="columns")


def test_releasable_energy_matches_hand_formula():
    m = models.load("double_pendulum")
    p = L.PendulumParams.from_model(m)
    expected = p.g * (p.m1 * p.c1 + p.m2 * p.l1 + p.m2 * p.c2)
    assert L.releasable_energy(dyn.tree_from_mujoco(m)) == pytest.approx(expected, abs=TOL)
    assert L.hand_potential(p, L.HORIZONTAL) - L.hand_potential(p, L.HANGING) == pytest.approx(expected, abs=TOL)


def test_hand_forward_inverts_hand_inverse():
    p = L.PendulumParams.from_model(models.load("double_pendulum"))
    for q, qd, qdd in zip(*L.lesson_states(50)):
        np.testing.assert_allclose(L.hand_forward(p, q, qd, L.hand_inverse(p, q, qd, qdd)), qdd, rtol=0, atol=TOL * 20)


def test_result3_against_physai(experiment):
    r3 = experiment["result3"]
    panda = models.load("franka_emika_panda")
    tree = dyn.tree_from_mujoco(panda)
    q = panda.key("home").qpos
    np.testing.assert_allclose(r3["panda_g"], dyn.gravity(tree, q), rtol=0, atol=TOL * 30)
    np.testing.assert_allclose(r3["panda_diag"], np.diag(dyn.mass_matrix(tree, q))[:7], rtol=0, atol=TOL * 10)
    np.testing.assert_array_equal(r3["panda_armature"], panda.dof_armature[:7])


def test_plot_is_written(experiment, tmp_path):
    load_script("experiment").plot(experiment["table"], tmp_path / "energy_drift.png")
    assert (tmp_path / "energy_drift.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- the energy-drift monitor ----

def test_monitor_warns_once_with_advice():
    monitor = EnergyMonitor(threshold_percent=5.0, scale=2.0, timestep=0.02)
    with pytest.warns(EnergyDriftWarning, match="smaller timestep than 20 ms or the RK4 integrator") as record:
        for k, e in enumerate([10.0, 10.05, 10.2, 10.3]):        # 0, 2.5, 10, 15 % of 2 J
            monitor.update(e, 0.02 * k)
    assert len(record) == 1
    assert monitor.event.index == 2 and monitor.event.time == pytest.approx(0.04)
    assert monitor.peak_percent == pytest.approx(15.0)


def test_monitor_quiet_within_threshold_and_losses_of_dissipative_systems():
    with warnings.catch_warnings():
        warnings.simplefilter("error", EnergyDriftWarning)
        assert not check_energy_drift([1.0, 1.01, 0.99], scale=1.0, threshold_percent=2.0).drifted
        assert not check_energy_drift([1.0, 0.5, 0.2], scale=1.0, threshold_percent=2.0, dissipative=True).drifted
    with pytest.warns(EnergyDriftWarning, match="gained"):
        check_energy_drift([1.0, 0.5, 0.6], scale=1.0, threshold_percent=2.0, dissipative=True, reference=0.55)
    with pytest.warns(EnergyDriftWarning):
        assert check_energy_drift([1.0, math.nan], scale=1.0, threshold_percent=2.0).drifted


def test_monitor_rejects_bad_settings():
    with pytest.raises(InvalidArgumentError, match="threshold_percent"):
        EnergyMonitor(0.0, 1.0)
    with pytest.raises(InvalidArgumentError, match="scale"):
        EnergyMonitor(1.0, -1.0)
    with pytest.raises(InvalidArgumentError, match=r"threshold_percent is '5'; expected a finite number > 0"):
        EnergyMonitor("5", 1.0)
    with pytest.raises(InvalidArgumentError, match=r"scale is array.*expected a finite number > 0 \[J"):
        EnergyMonitor(5.0, np.array([1.0, 2.0]))
    for bad in (math.nan, True, None):
        with pytest.raises(InvalidArgumentError, match="scale"):
            EnergyMonitor(5.0, bad)
    with pytest.raises(InvalidArgumentError, match="reference is 'E0'"):
        EnergyMonitor(5.0, 1.0, reference="E0")
    with pytest.raises(InvalidArgumentError, match="timestep is -0.01"):
        EnergyMonitor(5.0, 1.0, timestep=-0.01)
    assert EnergyMonitor(np.float64(5.0), np.int64(2)).scale == 2.0


def test_check_energy_drift_needs_one_time_per_reading():
    """A shorter times list used to drop the later readings silently (zip stops at the shorter)."""
    with pytest.raises(ShapeError, match="times has 2 entries, energies has 3"):
        check_energy_drift([1.0, 1.0, 9.0], scale=1.0, threshold_percent=2.0, times=[0.0, 0.1])
    with pytest.warns(EnergyDriftWarning, match=r"at t = 0\.200 s"):
        assert check_energy_drift([1.0, 1.0, 9.0], scale=1.0, threshold_percent=2.0, times=[0.0, 0.1, 0.2]).drifted


# ---- the scripts through the command line ----

def test_cli_break_it_from_another_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["lesson", "11", "break-it", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "break_it_output.txt").read_text()
    assert "EnergyDriftWarning" in text and "RK4 at 20 ms" in text
    assert text == capsys.readouterr().out


def test_exercise_answers_each_after_its_question():
    """Try first: each question is asked before any of its answer is printed; the answers are right."""
    out, asked = Transcript(echo=False), []
    exercises = load_script("exercises")
    r = exercises.run(out, lambda question: asked.append((question, len(out.lines))) or True)
    starts = [k for k, line in enumerate(out.lines) if line.startswith("== ")]
    assert [q.split(".")[0] for q, _ in asked] == ["Easy", "Medium", "Hard"] and [k for _, k in asked] == starts
    assert r["easy"]["delta"] == pytest.approx(r["easy"]["formula"], abs=TOL)
    assert r["easy"]["delta_mj"] == pytest.approx(r["easy"]["formula"], abs=TOL)
    B = load_script("exercises").BOUNDS
    assert r["medium"]["diff"] < B["inverse_vs_bias"] and r["medium"]["gravity_diff"] < B["gravity_vs_bias"]
    assert all(k == len(L.TIMESTEPS) for k in r["hard"]["falls"].values())
    assert r["hard"]["above"] and r["hard"]["growing"] and r["hard"]["smaller"]   # the printed answer to 3.


def test_exercises_prompt_waits_for_the_learner(monkeypatch, capsys):
    """The terminal prompt: the question, then the learner's answer echoed before the computation; at the input's end
    it stops asking (False)."""
    ask = load_script("exercises").ask_terminal
    monkeypatch.setattr("builtins.input", lambda prompt: "0.12 kg m^2")
    assert ask("Easy. A question?") is True
    assert capsys.readouterr().out == "\nEasy. A question?\nYou answered: 0.12 kg m^2. The computation:\n"

    def ended(prompt):
        raise EOFError
    monkeypatch.setattr("builtins.input", ended)
    assert ask("Medium. Another?") is False


def test_cli_unknown_lesson(capsys):
    assert cli.main(["lesson", "99", "build"]) == 2
    err = capsys.readouterr().err
    assert "no lesson 99" in err and "experiments" not in err
    existing = sorted(int(p.name[:2]) for p in lesson_dir(11).parent.glob("[0-9][0-9]-*"))
    assert err.strip().endswith(f"lessons with scripts: {', '.join(map(str, existing))}") and 11 in existing


def test_exercises_without_a_terminal_ask_and_answer_only_on_request(monkeypatch, capsys, tmp_path):
    """Input that is not a terminal (a pipe): the three questions, no answer computed or saved until --answers."""
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    exercises = load_script("exercises")
    assert exercises.main(["--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert all(question in out for question in exercises.QUESTIONS.values()) and "--answers" in out
    assert "== " not in out and not (tmp_path / "exercises_output.txt").exists()


def test_lesson_integrators_are_physais_mujoco_integrators():
    assert list(L.INTEGRATORS) == ["Euler", "RK4", "implicit", "implicitfast"]
    for label, value in L.INTEGRATORS.items():
        assert value == getattr(mujoco.mjtIntegrator, f"mjINT_{label.upper()}") == integrators.MUJOCO_INTEGRATOR[label.lower()]


def test_unknown_integrator_or_layout_is_an_invalid_argument():
    with pytest.raises(InvalidArgumentError, match="unknown integrator 'Verlet'; expected one of Euler, RK4"):
        L.MujocoEnergyRun(models.load("double_pendulum"), "Verlet")
    with pytest.raises(InvalidArgumentError, match="sources_as must be 'rows' or 'columns'"):
        L.EnergyTable(L.TIMESTEPS, scale=1.0).format(sources_as="diagonal")


@pytest.mark.parametrize("integrator", ["Euler", "implicit", "RK4"])
def test_physai_energy_run_reads_like_mujoco(integrator):
    """physai's simulator gives MuJoCo's energy readings, 1 s at 2 ms (RK4: read at its last stage, as d.energy is)."""
    m = models.load("double_pendulum")
    tree = dyn.tree_from_mujoco(m)
    e0, ours = L.PhysaiEnergyRun(tree, integrator, rk4_last_stage=integrator == "RK4")(0.002, 1.0)
    e0_mj, theirs = L.mujoco_energy_run(m, integrator)(0.002, 1.0)
    assert abs(e0 - e0_mj) <= 1e-12
    assert np.abs(ours - theirs).max() <= 1e-12


def test_bound_prints_the_bound_and_refuses_a_false_claim():
    from physai.lessons import ResidualAboveBound, bound

    assert bound(3.6e-15, 1e-13, "N m") == "< 1e-13 N m"
    assert bound(-2e-16, 5e-14) == "< 5e-14" and bound(0.0, 1e-4, "%") == "< 1e-4 %"
    for bad in (1e-13, 2e-13, math.nan, math.inf):
        with pytest.raises(ResidualAboveBound, match="not below its bound 1e-13"):
            bound(bad, 1e-13)
