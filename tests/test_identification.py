"""physai.identification: the regressor against rnea (an identity) and Pinocchio, live; parameters and base parameters.

Bounds: Y pi + armature qdd = rnea to 1e-12 relative (the same sums in another order); the Panda's regressor
columns and parameters against pin.computeJointTorqueRegressor and toDynamicParameters to 1e-12 (its MJCF joints
have pos = 0, so Pinocchio's joint frames are physai's link frames).
"""

import numpy as np
import pinocchio as pin
import pytest

from physai import conventions, engine, identification, models
from physai.exceptions import InvalidInertiaError, ShapeError
from helpers import MIXED, assert_close, load, states

MODELS = {"mixed": "mixed_joints", "random_free": "random_free_3", "random_fixed": "random_fixed_4", "h1": "unitree_h1",
          "panda": "franka_emika_panda", "arm7": "arm7"}                # test id: helpers.MODELS key


@pytest.fixture(scope="module", params=list(MODELS.values()), ids=list(MODELS))
def model(request):
    return engine.from_mujoco(load(request.param))


def test_regressor_times_parameters_is_rnea(model):
    q, qd, qdd, _ = states(model, 8)
    Y, pi = identification.regressor(model, q, qd, qdd), identification.parameters(model)
    assert Y.shape == (8, model.nv, 10 * model.nlink) and pi.shape == (10 * model.nlink,)
    assert_close(Y @ pi + model.dof_armature * qdd, engine.rnea(model, q, qd, qdd), 1e-12)
    assert_close(identification.regressor(model, q[0], qd[0], qdd[0]), Y[0], 1e-13)


def test_from_parameters_reproduces_the_model(model):
    q, qd, qdd, _ = states(model, 4, 3)
    again = identification.from_parameters(model, identification.parameters(model))
    assert_close(engine.rnea(again, q, qd, qdd), engine.rnea(model, q, qd, qdd), 1e-12)
    # and a changed set of parameters is what rnea then uses
    pi = identification.parameters(model) * 1.5
    scaled = identification.from_parameters(model, pi)
    Y = identification.regressor(model, q, qd, qdd)
    assert_close(engine.rnea(scaled, q, qd, qdd), Y @ pi + model.dof_armature * qdd, 1e-12)


def test_base_parameters(model):
    base = identification.base_parameters(model, n=60)
    q, qd, qdd, _ = states(model, 30, 9)
    Y, pi = identification.regressor(model, q, qd, qdd), identification.parameters(model)
    assert 0 < base.count < 10 * model.nlink and base.K.shape == (base.count, 10 * model.nlink)
    # the base regressor times the base parameters gives the same torques at other states
    assert_close(base.regressor(Y) @ base.of(pi), Y @ pi, 1e-9)
    assert np.linalg.matrix_rank(base.regressor(Y).reshape(-1, base.count)) == base.count


def test_known_base_parameter_counts():
    """A 7-dof arm like the Panda has 43 base parameters without friction (Gaz et al. 2019); a planar 2R arm 6."""
    assert identification.base_parameters(models.load("arm7"), n=60).count == 43
    assert identification.base_parameters(models.load("double_pendulum"), n=60).count == 6    # planar 2R: 3 per link


def test_panda_against_pinocchio():
    model = engine.from_mujoco("franka_emika_panda")
    pm = pin.buildModelFromMJCF(str(models.model_path("franka_emika_panda")))
    pd = pm.createData()
    assert model.nlink == pm.njoints - 1
    pi_pin = np.concatenate([pm.inertias[i].toDynamicParameters() for i in range(1, pm.njoints)])
    assert_close(identification.parameters(model), pi_pin, 1e-12)
    q, qd, qdd, _ = states(model, 4, 5)
    for k in range(4):
        Y_pin = pin.computeJointTorqueRegressor(pm, pd, q[k], qd[k], qdd[k])
        assert_close(identification.regressor(model, q[k], qd[k], qdd[k]), Y_pin, 1e-12)


def test_pseudo_inertia_round_trip_and_physical():
    model = engine.from_mujoco(MIXED)
    for row in identification.parameters(model).reshape(-1, 10):
        assert identification.is_physical(row)
        assert_close(identification.from_pseudo_inertia(identification.pseudo_inertia(row)), row, 1e-15)
    bad = np.array([1.0, 0, 0, 0, 1.0, 0, 0.1, 0, 0, 0.1])        # Ixx > Iyy + Izz: the triangle rule broken
    assert not identification.is_physical(bad)


def test_bad_parameters_are_named():
    model = engine.from_mujoco("arm7")
    pi = identification.parameters(model)
    with pytest.raises(ShapeError, match="10 parameters per link"):
        identification.from_parameters(model, pi[:-1])
    bad = pi.copy()
    bad[0] = -1.0
    with pytest.raises(InvalidInertiaError, match="link 0"):
        identification.from_parameters(model, bad)
    bad = pi.copy()
    bad[14] = 10.0                                               # link 1's Ixx far above Iyy + Izz
    with pytest.raises(InvalidInertiaError, match="not those of a real body"):
        identification.from_parameters(model, bad)
    identification.from_parameters(model, bad, check=False)


def test_joint_regressor_adds_armature_and_damping():
    model = engine.from_mujoco(MIXED)
    q, qd, qdd, _ = states(model, 4, 2)
    Y = identification.joint_regressor(model, q, qd, qdd, armature=True, damping=True)
    pi = identification.parameters(model, armature=True, damping=True)
    assert Y.shape[-1] == pi.shape[0] == 10 * model.nlink + 2 * model.nv
    assert_close(Y @ pi, engine.rnea(model, q, qd, qdd) + model.dof_damping * qd, 1e-12)
    names = identification.parameter_names(model, armature=True, damping=True)
    assert len(names) == len(pi) and names[-1].endswith(":damping")


def test_identification_experiment_core():
    """experiments/system-identification: a small run recovers the base parameters within its noise bound,
    exactly without noise, and its physically consistent estimate is physical."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments" / "system-identification" / "identify.py"
    spec = importlib.util.spec_from_file_location("identify", path)
    identify = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(identify)
    clean = identify.run(300, 0.0, physical=False)
    assert clean["W_residual"] < 1e-10 and clean["base_error"] < 1e-8
    r = identify.run(500, 0.5)
    assert r["count"] == 55 and r["worst_z"] < 4.5 and r["base_error"] < 3 * r["bound"]
    assert r["heldout_rms"] < 0.5 and r["phys_all_physical"] and r["phys_base_error"] < 3 * r["bound"]
    saved = (path.parent / "output.txt").read_text()
    assert saved.count("True") == 9 and saved.count("< 4.5") == 9


def test_h1_against_pinocchio_through_the_conventions():
    """H1 (free base, MJCF joints at pos = 0): physai's free joint is 3 massless slide links (columns 0-29) and a
    ball link carrying the pelvis; the other 20 links are Pinocchio's joints. tau = T^T tau_pin(q, T v, T a + Tdot v)
    (physai.conventions), so the columns of the ball link and after equal T^T Y_pin there, and the parameters agree."""
    model = engine.from_mujoco("unitree_h1")
    pm = pin.buildModelFromMJCF(str(models.model_path("unitree_h1")))
    pd = pm.createData()
    assert model.nlink == pm.njoints - 1 + 3
    pi_pin = np.concatenate([pm.inertias[i].toDynamicParameters() for i in range(1, pm.njoints)])
    assert_close(identification.parameters(model)[30:], pi_pin, 1e-12)
    assert not identification.parameters(model)[:30].any()
    q, qd, qdd, _ = states(model, 3, 5)
    for k in range(3):
        T = conventions.velocity_map(model, q[k])
        Y_pin = pin.computeJointTorqueRegressor(pm, pd, conventions.q_to_pinocchio(model, q[k]),
                                                conventions.v_to_pinocchio(model, q[k], qd[k]),
                                                conventions.a_to_pinocchio(model, q[k], qd[k], qdd[k]))
        assert_close(identification.regressor(model, q[k], qd[k], qdd[k])[:, 30:], T.T @ Y_pin, 1e-12)
