"""The examples run and do what they say: examples/ik_h1.py reaches its targets within its ranges, examples/osc_panda.py
keeps the Panda's hand on its circle (MuJoCo simulates; physai computes the control), examples/contact_g1_h1.py
simulates the G1 standing and the H1 dropped as mj_step does (physai simulates), examples/panda_grasp.py lifts a box with
the Panda's fingers and examples/g1_squat.py squats the G1 as mj_step does (physai simulates), examples/lqr_arm2.py balances the
two-link arm upright with a gain from step_derivatives (MuJoCo simulates), examples/lqr_g1_contact.py keeps the pushed
G1 standing with a gain from its linearisation through contact (MuJoCo simulates)."""

import importlib.util
import threading
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ik_reaches_the_h1_targets_within_its_ranges(capsys):
    iterations, position, orientation, _ = example("ik_h1").main([])      # (ranges: clamped at every step)
    assert iterations < 100 and position < 1e-9 and orientation < 1e-9
    assert "reached in" in capsys.readouterr().out


def test_operational_space_control_keeps_the_panda_hand_on_its_circle():
    """A 5 cm circle in 1 s: within 5 mm and 0.05 rad after the first 0.5 s (a run gave 1.0 mm and 0.011 rad; MuJoCo's
    joint damping and finger equality act on the arm uncompensated)."""
    position, orientation = example("osc_panda").main(["--seconds", "1.5"])
    assert position < 5e-3 and orientation < 5e-2


def test_contact_example_follows_mj_step(tmp_path, capsys):
    """examples/contact_g1_h1.py for 1 s: the G1 standing and the H1 dropped, physai's own contacts and solver, within
    1e-9 m of mj_step's base height and 1e-6 of its largest normal force; the H1 lands above its floor (it does not
    fall through, as without contacts); the figure is written."""
    plot = tmp_path / "contact.png"
    (g1_dz, g1_df, g1_z), (h1_dz, h1_df, h1_z) = example("contact_g1_h1").main(["--seconds", "1", "--plot", str(plot),
                                                                                "--runs", str(tmp_path)])
    assert g1_dz < 1e-9 and h1_dz < 1e-9 and g1_df < 1e-3 and h1_df < 1e-2
    assert g1_z > 0.7 and 0.05 < h1_z < 0.5 and plot.stat().st_size > 10_000
    assert "largest difference from mj_step" in capsys.readouterr().out
    # the runs it wrote open in the viewer (its server, no browser): the scene the file names, q and contacts as saved
    from physai.integrators import Trajectory
    from physai.lab.viewer import make_server
    from lab.client import served_run
    for name in ("g1", "h1"):
        saved = Trajectory.load(tmp_path / f"{name}.npz")
        server = make_server(saved.model, saved, 0)
        try:
            threading.Thread(target=server.serve_forever, daemon=True).start()
            shown = served_run(server)                                  # view.json, its arrays from run.bin
            assert np.array_equal(shown["q"], saved.q) and saved.contacts.force.shape[1] == 6
            assert np.array_equal(shown["contacts"]["start"], saved.contacts.start)
        finally:
            server.shutdown()
            server.server_close()


def test_panda_grasp_lifts_the_box_as_mj_step(capsys):
    """examples/panda_grasp.py: the box, held between the finger pads, ends at least 10 cm higher than it started (its
    schedule lifts it 12.5 cm); physai's run within 1e-8 m of mj_step's box height and 1e-6 in q (a run gave 2e-12 m and
    1.4e-10: the grasp's 30 contacts amplify rounding)."""
    height, dz, dq = example("panda_grasp").main([])
    assert height > 0.125 and dz < 1e-8 and dq < 1e-6
    assert "largest difference from mj_step" in capsys.readouterr().out


def test_g1_squat_follows_mj_step(capsys):
    """examples/g1_squat.py: the full G1 (every geom pair) squats 20 cm and stands up again within 1e-12 of mj_step in q
    (a run gave 2e-15)."""
    lowest, dz, dq = example("g1_squat").main([])
    assert lowest < 0.6 and dz < 1e-12 and dq < 1e-12
    assert "largest difference from mj_step" in capsys.readouterr().out


def test_lqr_from_step_derivatives_balances_the_arm_upright(capsys):
    """From 0.3 rad away, 3 s: upright within 1e-6 rad over the last 0.5 s (a run gave 4.7e-9), the motors within their
    range; the batched linearisation along the run reports B's change where no motor saturates (0.16 of B seen)."""
    settled, largest_ctrl, moved_a, moved_b = example("lqr_arm2").main([])
    assert settled < 1e-6 and largest_ctrl <= 10.0
    assert 0.0 < moved_b < 1.0 and moved_a > 0.0
    assert "one batched call" in capsys.readouterr().out


def test_lqr_through_contact_keeps_the_pushed_g1_standing(capsys):
    """A 0.4 m/s push: under its keyframe's servos alone the G1 ends more than 0.2 rad (or m) off its stance (0.64 and a
    base 0.13 m lower seen); under LQR from step_derivatives(..., constraints=True) within 0.05 of it (0.015 seen), its
    base within 1 cm of its standing height."""
    (servo_dev, _), (lqr_dev, lqr_z), standing = example("lqr_g1_contact").main([])
    assert servo_dev > 0.2 and lqr_dev < 0.05 and abs(lqr_z - standing) < 0.01
    assert "A, B through its 8 contacts" in capsys.readouterr().out


def test_ars_raises_the_hopper_return_reproducibly():
    """examples/ars_hopper.py, 50 iterations from seed 0 on physai/Hopper-v5: the noise-free policy's mean return over
    8 episodes at least doubles (a run gave 153 -> 2168), and a run of 25 iterations from the seed repeats the first
    evaluations exactly (the draws do not depend on the evaluations; physai's batched steps are deterministic on one
    machine)."""
    iterations, returns, _ = example("ars_hopper").main(["--iterations", "50", "--every", "25"])
    assert iterations == [0, 25, 50] and returns[-1] > 2 * returns[0]
    assert example("ars_hopper").main(["--iterations", "25", "--every", "25"])[1] == returns[:2]
