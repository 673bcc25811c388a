"""`physai lesson 11 check PATH` on physai's own dynamics.py (passes) and on copies with each classic bug planted: the
check stops at the step the bug breaks, with the lesson's hint for it."""

from pathlib import Path

import numpy as np

from physai import models
from physai.cli import main
from physai.lessons import check11
from physai.lessons.lesson11 import random_poses

DYNAMICS = Path(__file__).resolve().parents[1] / "src" / "physai" / "dynamics.py"


def planted(tmp_path, old: str, new: str, extra: str = "") -> Path:
    """A copy of physai/dynamics.py with `old` replaced by `new` (which must occur once) and `extra` appended."""
    text = DYNAMICS.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / "my_dynamics.py"
    path.write_text(text.replace(old, new) + extra)
    return path


def run(path, capsys) -> tuple[int, str]:
    status = main(["lesson", "11", "check", str(path)])
    return status, capsys.readouterr().out


def test_physai_dynamics_passes_every_step(capsys):
    status, out = run(DYNAMICS, capsys)
    assert status == 0 and out.count(" passes: ") == 5 and out.endswith("All five steps pass: your dynamics equal MuJoCo's.\n")


def failure(out: str) -> list[str]:
    """The lines of the failed step's message, from its "Step N: ..." line on."""
    lines = out.splitlines()
    return lines[next(k for k, line in enumerate(lines) if line.startswith("Step ") and " passes" not in line):]


def test_armature_left_out_of_the_mass_matrix(tmp_path, capsys):
    """The hint right under the failure, then where the matrices differ (the diagonal, by the armature, as computed from
    the model), the pose, and the two 6 x 6 matrices one row a line."""
    status, out = run(planted(tmp_path, "return M + np.diag(tree.armature)", "return M"), capsys)
    lines = failure(out)
    assert status == 1 and lines[0].startswith("Step 4: mass_matrix at robotstudio_so101 pose 0: max difference")
    assert lines[1] == f"Hint: {check11.HINTS['armature']}" and "Step 3 passes" in out
    armature = models.load("robotstudio_so101").dof_armature
    assert np.ptp(armature) == 0                               # one value on every dof: "by -a each"
    assert lines[2] == f"Where they differ: only the diagonal, by {-armature[0]:+.3g} each (= minus the armature, m.dof_armature)"
    q = random_poses(models.load("robotstudio_so101"), 10, np.random.default_rng(4))[0]     # Step 4's first pose
    name, shown = lines[3].split("=")
    assert name.strip() == "q" and np.allclose(np.array(shown.strip().strip("[]").split(), float), q, atol=1e-6)
    assert lines[4] == "expected (MuJoCo):" and lines[11] == "got (yours):" and len(lines) == 18
    assert all(line.lstrip().startswith(("[[", "[")) and line.rstrip().endswith("]") for line in lines[5:11] + lines[12:18])


def test_gravity_with_the_wrong_sign(tmp_path, capsys):
    path = planted(tmp_path, "np.concatenate([np.zeros(3), -tree.gravity])", "np.concatenate([np.zeros(3), tree.gravity])")
    status, out = run(path, capsys)
    assert status == 1 and "Step 2: rnea at double_pendulum state 0" in out
    assert failure(out)[1] == f"Hint: {check11.HINTS['gravity']}"
    assert failure(out)[2].endswith("(= minus twice the gravity torque)")
    assert [line.split()[0] for line in failure(out)[3:6]] == ["q", "qd", "qdd"]


def test_rnea_that_matches_qfrc_inverse_instead(tmp_path, capsys):
    """A learner who made rnea equal qfrc_inverse on the SO-101 (its joint damping subtracted): Step 2 names the trap."""
    damping = list(models.load("robotstudio_so101").dof_damping)
    extra = (f"\n_rnea = rnea\n\n\ndef rnea(tree, q, qd, qdd):\n    tau = _rnea(tree, q, qd, qdd)\n"
             f"    return tau + np.array({damping}) * np.asarray(qd) if len(q) == {len(damping)} else tau\n")
    status, out = run(_appended(tmp_path, extra), capsys)
    assert status == 1 and "Step 2: rnea at robotstudio_so101 state 0" in out
    assert failure(out)[1] == f"Hint: {check11.HINTS['qfrc_inverse']}"


def _appended(tmp_path, extra: str) -> Path:
    path = tmp_path / "my_dynamics.py"
    path.write_text(DYNAMICS.read_text() + extra)
    return path


def test_a_missing_step_and_a_missing_import_are_named(tmp_path, capsys):
    text = DYNAMICS.read_text()
    cut = tmp_path / "partial.py"
    cut.write_text(text[:text.index("def rnea(")])                    # Step 1 typed in, Step 2 not yet
    status, out = run(cut, capsys)
    assert status == 1 and "Step 1 passes" in out and "Step 2 needs rnea() in" in out
    no_import = planted(tmp_path, "from physai.spatial import axis_angle_to_mat, cross_force, cross_motion, quat_to_mat, skew, "
                                  "spatial_inertia", "from physai.spatial import axis_angle_to_mat, cross_force, cross_motion, "
                                                     "skew, spatial_inertia")
    status, out = run(no_import, capsys)
    assert status == 1 and "Step 1: your code raised NameError: name 'quat_to_mat' is not defined" in out
    assert f"Hint: {check11.HINTS['helpers']}" in out


def test_a_missing_file_and_another_lesson_are_usage_errors_in_one_line(tmp_path, capsys):
    assert main(["lesson", "11", "check", str(tmp_path / "nowhere.py")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "is not a file" in err, err
    assert main(["lesson", "12", "check", "x.py"]) == 2
    assert "lesson 12 has no checker" in capsys.readouterr().err
