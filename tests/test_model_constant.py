"""A Model is constant: no public call writes into it, but for the entries of Model.frame_links (frame_in_link's
results by name, kept in the Model: read through per_model's store they would cost a compiled call by frame name about
a third more; see Model's docstring). Every attribute of a Model (arrays by value and by flags.writeable, every other
value by identity, one level into the objects it holds: geoms, opt, coords, actuators) is the same before and after
each public call, on both backends, on a model with contacts, equalities, limits, friction loss, damping and actuators.
A Model holds every value Model.KEPT names from the moment it is loaded (made once by physai.engine.set_const, MuJoCo's
mj_setConst); the only value it gains is the compiled copy (made once per process): what is made on first use (M's
sparsity pattern, dof_turns, geom_dofs) is held in engine.model.per_model's store, not in the Model, and a second round
of every call changes nothing at all."""

import copy
import dataclasses
import pickle
import re
import threading
import time
import warnings

import mujoco
import numpy as np
import pytest

from helpers import assert_close, constraint_scene_xml, run
from scenes import capsule_beside_a_bare_mesh
from physai import (centroidal, collision, constraints, derivatives, engine, integrators, inverse, jacobians, kinematics,
                    models)
from physai.engine import constraint, native, support
from physai.engine.collision import dof_preorder
from physai.engine.model import Model, per_model
from physai.exceptions import InvalidModelError, UnsupportedModelError

BACKENDS = ["native", "numpy"] if native.available() else ["numpy"]
#: what is made on first use and held in per_model's store (properties reading it), never in the Model's __dict__
MADE_ON_FIRST_USE = ("dof_ancestor", "dof_ancestors", "dof_Mrow", "dof_Mcol", "dof_Mmask", "dof_turns", "geom_dofs")


def scene() -> tuple[mujoco.MjModel, Model]:
    """constraint_scene_xml's tree (contacts, connect, weld and joint equalities, limits, friction loss, damping) with a
    motor on each hinge and slide; built fresh, so that nothing is kept yet."""
    xml = constraint_scene_xml(3)
    scalar = re.findall(r'<joint name="(j\d+)" type="(?:hinge|slide)"', xml)
    motors = "".join(f'<motor joint="{j}" gear="{k + 1}"/>' for k, j in enumerate(scalar))
    m = mujoco.MjModel.from_xml_string(xml.replace("</mujoco>", f"<actuator>{motors}</actuator></mujoco>"))
    return m, engine.from_mujoco(m)


def snapshot(obj, depth: int = 1) -> dict:
    """Each attribute of obj: (id, a copy and writeable flag for arrays, the attributes of held objects to `depth`)."""
    out = {}
    for name, value in vars(obj).items():
        if isinstance(value, np.ndarray):
            out[name] = (id(value), value.copy(), value.flags.writeable)
        elif depth and hasattr(value, "__dict__") and not isinstance(value, type):
            out[name] = (id(value), snapshot(value, depth - 1))
        else:
            out[name] = (id(value),)
    return out


def differences(before: dict, after: dict, path: str = "") -> list[str]:
    """What changed between two snapshots, by attribute path."""
    found = [f"{path}{name} added" for name in after.keys() - before.keys()]
    found += [f"{path}{name} removed" for name in before.keys() - after.keys()]
    for name in before.keys() & after.keys():
        b, a = before[name], after[name]
        if b[0] != a[0]:
            found.append(f"{path}{name} replaced")
        elif len(b) == 3 and (b[2] != a[2] or b[1].shape != a[1].shape or not np.array_equal(b[1], a[1], equal_nan=True)):
            found.append(f"{path}{name} changed (values or writeable)")
        elif len(b) == 2:
            found += differences(b[1], a[1], f"{path}{name}.")
    return found


def public_calls(m: mujoco.MjModel, model: Model) -> dict:
    """Every public call on the model, by name: a function of no argument."""
    rng = np.random.default_rng(0)
    q = m.qpos0.copy()
    q[2] -= 0.25                                                       # the tree's root down on the floor: contacts
    qd, x = rng.normal(size=model.nv) * 0.3, rng.normal(size=model.nv)
    ctrl = rng.normal(size=model.nu)
    Q, QD = np.stack([q, q]), np.stack([qd, -qd])
    return {
        "step": lambda: integrators.step(model, q, qd, ctrl=ctrl),
        "simulate": lambda: integrators.simulate(model, q, qd, steps=3, ctrl=ctrl),
        "rollout": lambda: integrators.rollout(model, Q, QD, steps=3, ctrl=ctrl),
        "forward_dynamics": lambda: engine.forward_dynamics(model, q, qd, x),
        "rnea": lambda: engine.rnea(model, q, qd, x),
        "mass_matrix": lambda: engine.mass_matrix(model, q),
        "energy": lambda: engine.energy(model, q, qd),
        "inverse": lambda: inverse.inverse_dynamics(model, q, qd, x, ctrl=ctrl),
        "constraint_rows": lambda: constraints.rows(model, q, qd),
        "constraint_forward": lambda: constraints.forward_dynamics(model, q, qd, x),
        "constraint_inverse": lambda: constraints.inverse_dynamics(model, q, qd, x),
        "collision_detect": lambda: collision.detect(model, q),
        "rnea_derivatives": lambda: derivatives.rnea_derivatives(model, q, qd, x),
        "forward_dynamics_derivatives": lambda: derivatives.forward_dynamics_derivatives(model, q, qd, x),
        "step_derivatives": lambda: derivatives.step_derivatives(model, q, qd, ctrl=ctrl),
        "step_derivatives_constrained": lambda: derivatives.step_derivatives(model, q, qd, ctrl=ctrl, constraints=True),
        "body_jacobian": lambda: jacobians.body_jacobian(model, q, "b1"),
        "frame_jacobian": lambda: jacobians.frame_jacobian(model, q, "b2"),
        "frame_velocity": lambda: kinematics.frame_velocity(model, q, qd, "c"),
        "com_jacobian": lambda: centroidal.com_jacobian(model, q),
        "momentum_matrix": lambda: centroidal.momentum_matrix(model, q),
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_public_call_writes_into_a_model(backend):
    m, model = scene()
    calls = public_calls(m, model)
    assert model.nu and model.eq_type.size and model.jnt_limited.any() and model.geoms.ngeom
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for round_ in ("first", "second"):
            for name, call in calls.items():
                before = snapshot(model)
                run(backend, call)
                changed = differences(before, snapshot(model))
                if round_ == "first":     # the compiled copy appears, once (frame_links stays one dict: its
                    changed = [c for c in changed if c != "compiled added"]     # entries, the exception, go unchecked)
                assert not changed, f"{backend} {name} ({round_} round) wrote into the Model: {changed}"


FIRST_USES = ("step_derivatives_constrained", "mass_matrix", "collision_detect", "simulate")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", FIRST_USES)
def test_what_a_call_makes_on_first_use_stays_out_of_the_model(backend, name):
    """After a call that may make M's pattern, dof_turns or geom_dofs on first use, the Model's __dict__ holds the same
    names, each the same object (its compiled copy, made once per process, aside); then each of those values, read
    twice, is one object (stored, not remade per read; its values: tests/test_urdf.py). Not every case makes something
    (four of the eight passed on main, where the others failed), and the identity check holds of a cached_property as
    well: the __dict__ check is what fails when a call writes into the Model."""
    m, model = scene()
    before = dict(vars(model))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(backend, public_calls(m, model)[name])
    after = {k: v for k, v in vars(model).items() if k != "compiled"}
    assert after.keys() == before.keys(), f"{name} added {sorted(after.keys() - before.keys())}"
    assert not [k for k in before if after[k] is not before[k]]
    for made in MADE_ON_FIRST_USE:
        assert getattr(model, made) is getattr(model, made), made


def test_threads_using_a_model_first_at_once_get_one_object():
    """per_model under threads: eight threads released together by a barrier ask for what a slow make (each call a new
    object) makes of one fresh Model; each may make its own, but every thread gets the same object, the one stored
    (before setdefault, each got its own)."""
    _, model = scene()
    made = per_model(lambda model: time.sleep(0.05) or object())
    barrier, got = threading.Barrier(8), []

    def first_use():
        barrier.wait()
        got.append(made(model))
    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(value is made(model) for value in got)


def fresh(source: str) -> tuple[mujoco.MjModel, Model]:
    """The MjModel and a freshly loaded Model of a Menagerie robot, or of the contact scene (scene())."""
    if source == "scene":
        return scene()
    m = models.load(source)
    return m, engine.from_mujoco(m)


@pytest.mark.parametrize("source", ["franka_emika_panda", "scene", "unitree_g1"])
def test_a_loaded_model_holds_every_constant(source):
    """Before any call, a loaded Model holds every value Model.KEPT names (set_const, as mj_setConst at the end of
    MuJoCo's compiler); its invweight0 is MuJoCo's within 1e-13 relative (1.0e-14 seen, on the G1's dofs); its
    contact_dofs (made from the pairs' common ancestors, without M's pattern) are the dofs that move one geom of a
    candidate pair and not the other, read off dof_ancestor pair by pair (pairs within the Panda's and the G1's trees,
    and with the world)."""
    m, model = fresh(source)
    assert set(Model.KEPT) <= set(vars(model)), f"missing: {set(Model.KEPT) - set(vars(model))}"
    body, dof = model.kept("invweight0")
    assert_close(body, m.body_invweight0[1:], 1e-13, floor=0.0, what="body_invweight0")
    assert_close(dof, m.dof_invweight0, 1e-13, floor=0.0, what="dof_invweight0")
    expected = contact_dofs_pair_by_pair(model)
    assert expected.any()
    np.testing.assert_array_equal(model.kept("contact_dofs"), expected)


def contact_dofs_pair_by_pair(model: Model) -> np.ndarray:
    """(nv,) the dofs that move one geom of a candidate pair and not the other, read off dof_ancestor pair by pair."""
    pairs, missing = model.kept("collision_candidates")
    expected, body = np.zeros(model.nv, bool), model.geoms.geom_bodyid
    for g1, g2 in pairs.geom.tolist() + list(missing):
        expected |= support.dof_chain(model, body[g1]) ^ support.dof_chain(model, body[g2])
    return expected


def random_forest_xml(rng: np.random.Generator) -> str:
    """A floor and 2-4 trees of up to 15 bodies each (free, ball, hinge or slide joints; a body now and then welded), one
    sphere a body, collision bits drawn so that some pairs collide and others do not (some dofs move no pair apart)."""
    def body(depth: int, name: str) -> str:
        joint = ("<freejoint/>" if depth == 0 and rng.random() < 0.5 else "" if rng.random() < 0.15 else
                 f'<joint type="{rng.choice(["ball", "hinge", "slide"])}" axis="0 1 0"/>')
        bits = f'contype="{rng.choice([0, 0, 0, 1, 2])}" conaffinity="{rng.choice([0, 0, 1, 2])}"'
        kids = "".join(body(depth + 1, f"{name}{k}") for k in range(rng.integers(0, 3) if depth < 3 else 0))
        return f'<body name="b{name}" pos="0.1 0 -0.1">{joint}<geom type="sphere" size="0.05" {bits}/>{kids}</body>'
    trees = "".join(body(0, f"t{k}_").replace('pos="0.1 0 -0.1"', f'pos="{k} 0 1"', 1)
                    for k in range(rng.integers(2, 5)))
    floor = f'<geom type="plane" size="5 5 .1" contype="{rng.choice([0, 1])}" conaffinity="{rng.choice([0, 2])}"/>'
    return f"<mujoco><worldbody>{floor}{trees}</worldbody></mujoco>"


@pytest.mark.parametrize("seed", range(6))
def test_contact_dofs_of_random_forests(seed):
    """make_contact_dofs (subtrees as ranges of the depth-first numbering) gives the pair-by-pair definition on random
    forests of free, ball, hinge and slide joints."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(random_forest_xml(np.random.default_rng(seed))))
    expected = contact_dofs_pair_by_pair(model)
    assert 0 < expected.sum() < model.nv                              # some dofs move a pair apart, others none
    np.testing.assert_array_equal(model.kept("contact_dofs"), expected)


def test_dof_preorder_numbers_any_parents_first_tree():
    """engine.collision.dof_preorder on trees numbered parents first but not depth first (trees interleaved, a later child of
    the first dof): its positions are a permutation, and each subtree's range holds exactly the dof's descendants."""
    parent = np.array([-1, -1, 0, 1, 2, 0, 3, -1, 5, 2])
    enter, end = dof_preorder(parent)
    assert sorted(enter.tolist()) == list(range(len(parent)))
    for j in range(len(parent)):
        inside = {k for k in range(len(parent)) if enter[j] <= enter[k] < end[j]}
        assert inside == {k for k in range(len(parent)) if j in ancestors(parent, k)}, j


def ancestors(parent: np.ndarray, k: int) -> set:
    """k and the dofs above it."""
    chain = {k}
    while parent[k] >= 0:
        k = parent[k]
        chain.add(k)
    return chain


def test_a_model_without_geoms_or_body_forces_holds_empty_structures():
    """A URDF chain (no collision geoms, no gravity compensation, no fluid) pays for no collision structure and no dof
    chains: its candidates, broad phase and link_dofchains are empty; its limits are its constraints by default."""
    links = "".join(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>'
                    for i in range(4))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/><axis xyz="0 1 0"/>'
                     '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>' for i in range(1, 4))
    model = engine.from_urdf(f'<robot name="chain">{links}{joints}</robot>')
    pairs, missing = model.kept("collision_candidates")
    assert not len(pairs) and not missing and not len(model.kept("collision_broad_phase").group_start)
    assert model.kept("link_dofchains") == [] and model.kept("constraints_by_default") is True and model.jnt_limited.all()


def test_a_replaced_model_is_given_its_constants_by_set_const():
    """dataclasses.replace makes a Model without constants (they are not fields): reading one names set_const, which
    makes them from the new fields (here a ten times heavier tree: its invweight0 ten times smaller)."""
    _, model = scene()
    heavier = dataclasses.replace(model, link_mass=model.link_mass * 10, link_inertia=model.link_inertia * 10,
                                  body_mass=model.body_mass * 10, dof_armature=model.dof_armature * 10)
    with pytest.raises(InvalidModelError, match="made without physai.engine.set_const"):
        constraint.invweight0(heavier)
    assert engine.set_const(heavier) is heavier
    np.testing.assert_allclose(constraint.invweight0(heavier)[1], constraint.invweight0(model)[1] / 10, rtol=1e-12)


def test_a_pickled_model_leaves_out_what_its_uses_made():
    """A Model pickled after step_derivatives(constraints=True), which makes dof_turns (nv^2 floats), M's pattern and
    the compiled copy, is no larger than when loaded (Dask sends Models to its workers); the copy remakes them and gives
    the same A and B (to 1e-12 of their largest entry: the same operations, a fresh compiled copy)."""
    m, model = scene()
    q = m.qpos0.copy()
    q[2] -= 0.25                                                       # the tree's root down on the floor: contacts
    qd = np.random.default_rng(0).normal(size=model.nv) * 0.3
    loaded = len(pickle.dumps(model))
    A, B = derivatives.step_derivatives(model, q, qd, constraints=True)
    copy = pickle.loads(pickle.dumps(model))
    assert len(pickle.dumps(model)) <= loaded and "compiled" not in vars(copy)
    for mine, theirs in zip((A, B), derivatives.step_derivatives(copy, q, qd, constraints=True)):
        assert np.abs(theirs - mine).max() <= 1e-12 * np.abs(mine).max()


def test_a_model_refuses_writes():
    _, model = scene()
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.nq = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.constraints_ready = True
    with pytest.raises(ValueError):
        model.link_mass[0] = 1.0
    with pytest.raises(KeyError, match="Model.KEPT"):
        model.kept("warned_pairs")
    with pytest.raises(KeyError, match="Model.KEPT"):
        model.keep("warned_pairs", set())
    with pytest.raises(KeyError, match="holds 'invweight0' already"):
        model.keep("invweight0", None)


def test_a_prepared_compiled_copy_does_not_skip_the_collision_check():
    """Readiness is the compiled copy's own (its constraint part), not a flag on the Model: once detect(...,
    ignore_unsupported=True) has prepared it, a step on a model with pairs physai cannot collide still refuses it."""
    model = capsule_beside_a_bare_mesh(0.01, floor=True)       # the mesh's data left out: its pairs refused
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run("native", collision.detect, model, model.qpos0, ignore_unsupported=True)
    assert native.compiled(model).has_constraints
    with pytest.raises(UnsupportedModelError, match="cannot collide"):
        run("native", integrators.step, model, model.qpos0, np.zeros(model.nv))


def what_a_user_sees(model: Model) -> dict:
    """What comparing, hashing, pickling and copying show of a Model: its equality (to itself, to its copies), its hash,
    its pickle's bytes and the attributes of its shallow copy, deep copy and unpickled copy."""
    shallow, deep, unpickled = copy.copy(model), copy.deepcopy(model), pickle.loads(pickle.dumps(model))
    return {"equal to itself": model == model, "hash": hash(model), "in a set": model in {model},
            "equal to a copy": [model == other for other in (shallow, deep, unpickled)],
            "pickle": pickle.dumps(model),
            "copies' attributes": [sorted(vars(other)) for other in (shallow, deep, unpickled)]}


def test_what_a_user_sees_of_a_model_is_the_same_before_and_after_what_it_makes_on_first_use():
    """step_derivatives(constraints=True) makes dof_turns and geom_dofs (and M's pattern) for the Model it is given, on
    first use; equality and hashing (by identity), pickling (the same bytes) and copy.copy / copy.deepcopy (without what the
    uses made) show the same Model before the call and after it."""
    m, model = scene()
    q = m.qpos0.copy()
    q[2] -= 0.25                                                       # the tree's root down on the floor: contacts
    before = what_a_user_sees(model)
    derivatives.step_derivatives(model, q, np.zeros(model.nv), constraints=True)
    after = what_a_user_sees(model)
    assert before == after, [name for name in before if before[name] != after[name]]
