"""physai.recording against MuJoCo's mj_contactForce, computed live: each contact's force in its contact frame at one
state (random scenes of primitives on a tilted plane, pyramidal and elliptic cones; the G1 standing), and every state of
a run (record_contacts), saved and loaded with the trajectory."""

import dataclasses
import warnings

import mujoco
import numpy as np
import pytest

from physai import collision, engine, integrators, models, recording
from physai.exceptions import CollisionWarning
from scenes import random_scene, states

#: |physai - MuJoCo| / max(1, |MuJoCo's force|), per contact: both run Newton's method from the same warm start to the
#: solver's tolerance (the scenes: 1e-12; the G1: its own). Seen: 1e-8 pyramidal, 2e-6 elliptic (MuJoCo stops its
#: elliptic solves after one iteration from the warm start), 5e-15 on the G1
RTOL = 1e-5


def mujoco_forces(m, d) -> np.ndarray:
    """(ncon, 6) mj_contactForce of the contacts MuJoCo keeps (exclude == 0, those physai.collision.from_mujoco gives)."""
    kept = [i for i in range(d.ncon) if d.contact[i].exclude == 0]
    out = np.zeros((len(kept), 6))
    for j, i in enumerate(kept):
        mujoco.mj_contactForce(m, d, i, out[j])
    return out


def worst_error(mine: np.ndarray, theirs: np.ndarray) -> float:
    assert mine.shape == theirs.shape
    return float((np.abs(mine - theirs).max(axis=1, initial=0) / np.maximum(1.0, np.abs(theirs).max(axis=1, initial=0))).max(initial=0))


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("seed", [0, 1])
def test_contact_forces_match_mj_contact_force_on_random_scenes(seed, cone):
    m = mujoco.MjModel.from_xml_string(random_scene(seed, supported_only=True))
    m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC if cone == "elliptic" else mujoco.mjtCone.mjCONE_PYRAMIDAL
    m.opt.tolerance = 1e-12                                # both solvers to convergence: the forces, not where each stopped
    model = engine.from_mujoco(m)
    counted = 0
    for _, d in states(m, 240, 40):
        mine = recording.contact_forces(model, d.qpos, d.qvel, contacts=collision.from_mujoco(m, d),
                                        qacc_warmstart=d.qacc_warmstart)
        theirs = mujoco_forces(m, d)
        assert worst_error(mine.force, theirs) < RTOL
        counted += len(theirs)
    assert counted > 20                                    # the scenes touch


def test_recorded_contacts_of_the_standing_g1_match_mujoco(tmp_path):
    """MuJoCo's run of the G1 on its scene (keyframe ctrl), given to record_contacts as a Trajectory: physai finds the
    same contacts itself (positions to 1e-12 m) and their forces agree with mj_contactForce; saved and loaded unchanged."""
    m = models.load("unitree_g1", "scene")
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    Q, V, F, P = [], [], [], []
    for _, d in states(m, 12, 3, key=0):
        Q.append(d.qpos.copy()), V.append(d.qvel.copy()), F.append(mujoco_forces(m, d))
        P.append(np.array([d.contact[i].pos for i in range(d.ncon) if d.contact[i].exclude == 0]))
        ctrl = d.ctrl.copy()
    run = integrators.Trajectory(np.arange(len(Q)) * m.opt.timestep, np.array(Q), np.array(V), None, "implicitfast",
                                 m.opt.timestep, model="unitree_g1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        recorded = recording.record_contacts(model, run, ctrl=ctrl)
    c = recorded.contacts
    for k in range(len(Q)):
        assert np.abs(c.pos[c.at(k)] - P[k]).max() < 1e-12
        assert worst_error(c.force[c.at(k)], F[k]) < RTOL
    recorded.save(tmp_path / "g1.npz")
    back = integrators.Trajectory.load(tmp_path / "g1.npz").contacts
    assert all(np.array_equal(getattr(back, f.name), getattr(c, f.name)) for f in dataclasses.fields(c))


def mujoco_run(m, steps: int, seed: int):
    """MuJoCo's run of `steps` mj_step under random per-step controls from a random state: (Trajectory, ctrl (S, nu),
    MuJoCo's d.actuator_force (S, nu) after mj_forward at each state with its ctrl and activations)."""
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.act[:] = m.qpos0 + 0.2 * rng.normal(size=m.nq), rng.normal(size=m.nv), rng.uniform(-1, 1, m.na)
    ctrl = rng.uniform(-1.5, 1.5, (steps + 1, m.nu))
    Q, V, A, F = [], [], [], []
    for k in range(steps + 1):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_forward(m, d)
        Q.append(d.qpos.copy()), V.append(d.qvel.copy()), A.append(d.act.copy()), F.append(d.actuator_force.copy())
        mujoco.mj_step(m, d)
    run = integrators.Trajectory(np.arange(steps + 1) * m.opt.timestep, np.array(Q), np.array(V), None, "euler",
                                 m.opt.timestep, act=np.array(A))
    return run, ctrl, np.array(F)


@pytest.mark.parametrize("kind", ["activations", "transmissions"])
def test_recorded_actuator_forces_match_mujoco(kind, tmp_path):
    """record_actuator_forces along MuJoCo's runs (random per-step controls): every kind of actuator dynamics (filter,
    integrator, muscles, actearly) with the run's activations, and every transmission (ball and free joints, sites,
    slider-crank, spatial tendon, adhesion on a box in contact): within 1e-12 of MuJoCo's d.actuator_force (relative to
    the state's largest, at least 1 N); saved and loaded unchanged, and a wrong shape refused by name."""
    from physai.exceptions import TrajectoryFileError
    from helpers import assert_close
    from test_actuation import actuated_xml, transmission_xml
    xml = actuated_xml(3) if kind == "activations" else transmission_xml(1, contact=True)
    m = mujoco.MjModel.from_xml_string(xml)
    run, ctrl, expected = mujoco_run(m, 30, seed=5)
    recorded = recording.record_actuator_forces(engine.from_mujoco(m), run, ctrl=ctrl)
    assert recorded.actuator_force.shape == (31, m.nu) and np.abs(expected).max() > 0.1
    assert_close(recorded.actuator_force, expected, 1e-12, per_state=True, what="actuator_force")
    recorded.save(tmp_path / "run.npz")
    assert np.array_equal(integrators.Trajectory.load(tmp_path / "run.npz").actuator_force, recorded.actuator_force)
    with pytest.raises(TrajectoryFileError, match=r"actuator_force has shape \(30, \d+\); expected \(S, nu\)"):
        dataclasses.replace(recorded, actuator_force=recorded.actuator_force[1:]).save(tmp_path / "bad.npz")
    with np.load(tmp_path / "run.npz") as npz:
        arrays = dict(npz) | {"actuator_force": np.zeros(31)}
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(TrajectoryFileError, match=r"actuator_force has shape \(31,\)"):
        integrators.Trajectory.load(tmp_path / "bad.npz")


def test_record_adds_contacts_and_actuator_forces_of_the_g1():
    """recording.record on physai's run of the G1 standing: the contacts as record_contacts gives them, and the actuator
    forces within 1e-12 of MuJoCo's d.actuator_force at each state (mj_forward, the keyframe's ctrl)."""
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    model = engine.from_mujoco(m)
    run = integrators.simulate(model, d.qpos, d.qvel, steps=5, ctrl=d.ctrl)
    recorded = recording.record(model, run, ctrl=d.ctrl)
    assert np.array_equal(recorded.contacts.force, recording.record_contacts(model, run, ctrl=d.ctrl).contacts.force)
    for k in range(len(run.t)):
        d.qpos[:], d.qvel[:] = run.q[k], run.qd[k]
        mujoco.mj_forward(m, d)
        scale = max(1.0, np.abs(d.actuator_force).max())
        assert np.abs(recorded.actuator_force[k] - d.actuator_force).max() <= 1e-12 * scale
    assert np.abs(recorded.actuator_force).max() > 0.1                  # the servos pull (0.75 N m seen)
