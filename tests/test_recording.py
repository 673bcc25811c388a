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
