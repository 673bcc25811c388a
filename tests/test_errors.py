"""Bad input gets a clear exception that names the offending thing and what was expected."""

import os

import mujoco
import numpy as np
import pytest

from physai import dynamics as dyn
from physai import engine, models
from physai.exceptions import (InvalidArgumentError, InvalidInertiaError, InvalidModelError, InvalidStateError, ModelUnavailableError,
                               ShapeError, UnknownModelError, UnsupportedModelError)


@pytest.fixture(scope="module")
def tree():
    return dyn.tree_from_mujoco(models.load("double_pendulum"))


@pytest.mark.parametrize("call, message", [
    (lambda t: dyn.rnea(t, np.zeros(3), np.zeros(2), np.zeros(2)), "^q has 3 entries, the model needs 2"),
    (lambda t: dyn.mass_matrix(t, [0.0]), "^q has 1 entry, the model needs 2"),
    (lambda t: dyn.bias(t, np.zeros(2), np.zeros(5)), "^qd has 5 entries, the model needs 2"),
    (lambda t: dyn.rnea(t, np.zeros(2), np.zeros(2), np.zeros(4)), "^qdd has 4 entries, the model needs 2"),
    (lambda t: dyn.forward_dynamics(t, np.zeros(2), np.zeros(2), np.zeros(1)), "^tau has 1 entry, the model needs 2"),
    (lambda t: dyn.energy(t, np.zeros(2), np.zeros((2, 1))), r"^qd must have shape \(2,\) \(2 numbers\), got shape \(2, 1\)"),
    (lambda t: dyn.rnea(t, np.zeros((1, 2)), np.zeros(2), np.zeros(2)), r"^q must have shape \(2,\) .*got shape \(1, 2\)"),
    (lambda t: dyn.gravity(t, "ab"), "^q must be an array of 2 numbers, got str"),
])
def test_wrong_shapes_raise_shape_error_naming_the_argument(tree, call, message):
    with pytest.raises(ShapeError, match=message):
        call(tree)


def test_wrong_length_message_says_what_the_model_needs(tree):
    with pytest.raises(ShapeError, match="q has 3 entries, the model needs 2"):
        dyn.rnea(tree, np.zeros(3), np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("arg", ["q", "qd", "qdd"])
def test_nan_in_the_state_is_refused(tree, arg):
    state = {"q": np.zeros(2), "qd": np.zeros(2), "qdd": np.zeros(2)}
    state[arg][1] = np.nan
    with pytest.raises(InvalidStateError, match=rf"{arg}\[1\] is nan"):
        dyn.rnea(tree, state["q"], state["qd"], state["qdd"])


def test_infinite_torque_is_refused(tree):
    with pytest.raises(InvalidStateError, match=r"tau\[0\] is inf"):
        dyn.forward_dynamics(tree, np.zeros(2), np.zeros(2), [np.inf, 0.0])


def _mjcf(joints: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(
        f'<mujoco><worldbody><body name="link">{joints}<geom size="0.1"/></body></worldbody></mujoco>')


@pytest.mark.parametrize("joint, kind", [('<freejoint name="j"/>', "free"), ('<joint name="j" type="ball"/>', "ball")])
def test_ball_and_free_joints_are_not_supported_yet(joint, kind):
    with pytest.raises(UnsupportedModelError, match=rf"joint 'j' of body 'link' is a {kind} joint"):
        dyn.tree_from_mujoco(_mjcf(joint))


@pytest.mark.parametrize("field, what", [("dof_dampingpoly", "polynomial joint damping"),
                                         ("jnt_stiffnesspoly", "polynomial joint stiffness"),
                                         ("tendon_damping", "tendon damping"), ("tendon_stiffness", "tendon stiffness")])
def test_passive_forces_a_tree_cannot_hold_are_refused(field, what):
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body name="link"><joint name="j" axis="1 0 0"/><geom size="0.1"/></body></worldbody>'
        '<tendon><fixed name="t"><joint joint="j" coef="1"/></fixed></tendon></mujoco>')
    dyn.tree_from_mujoco(m)                              # all zero: accepted
    getattr(m, field)[0] = 0.2
    with pytest.raises(UnsupportedModelError, match=f"the model has {what} .{field}."):
        dyn.tree_from_mujoco(m)


def test_disabled_springs_and_dampers_are_read_as_zero():
    m = _mjcf('<joint axis="1 0 0" damping="0.3" stiffness="2" springref="0.1"/>')
    assert dyn.tree_from_mujoco(m).damping[0] == 0.3
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_DAMPER | mujoco.mjtDisableBit.mjDSBL_SPRING
    tree = dyn.tree_from_mujoco(m)
    assert tree.damping[0] == 0 and tree.stiffness[0] == 0


@pytest.mark.parametrize("xml, what", [
    ('<body name="link" gravcomp="1"><joint axis="1 0 0"/><geom size="0.1"/></body>', "body gravity compensation"),
    ('<body name="link"><joint axis="1 0 0"/><geom size="0.1"/></body>', "fluid forces"),
])
def test_gravity_compensation_and_fluid_forces_are_refused(xml, what):
    option = '<option density="1.2"/>' if what == "fluid forces" else ""
    m = mujoco.MjModel.from_xml_string(f"<mujoco>{option}<worldbody>{xml}</worldbody></mujoco>")
    with pytest.raises(UnsupportedModelError, match=what):
        dyn.tree_from_mujoco(m)


def test_complex_input_is_refused():
    with pytest.raises(ShapeError, match="q must be real numbers"):
        dyn.gravity(dyn.tree_from_mujoco(models.load("double_pendulum")), [0.1 + 1j, 0.0])


def test_ragged_rows_are_named_not_a_bare_numpy_error():
    """numpy raises its own ValueError while checking a ragged list for complex values; the argument is named instead."""
    model = engine.from_mujoco("double_pendulum")
    with pytest.raises(ShapeError, match=r"q must be an array of shape \(2,\) or \(N, 2\), got list: .*inhomogeneous"):
        engine.rnea(model, [[0.1, 0.2], [0.3]], [0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ShapeError, match="q must be an array of 2 numbers, got list"):
        dyn.gravity(dyn.tree_from_mujoco(models.load("double_pendulum")), [[0.1], [0.2, 0.3]])


def test_two_joints_in_one_body_are_refused():
    with pytest.raises(UnsupportedModelError, match="body 'link' has 2 joints"):
        dyn.tree_from_mujoco(_mjcf('<joint axis="1 0 0"/><joint axis="0 1 0"/>'))


def test_unknown_model_name_lists_the_known_ones():
    with pytest.raises(UnknownModelError, match="unknown model 'double_pendulm'. Did you mean 'double_pendulum'"):
        models.load("double_pendulm")


def test_a_model_name_must_be_a_string():
    with pytest.raises(UnknownModelError, match=r"a model is a name \(a string\) or the path of an MJCF file, got None"):
        models.load(None)


def test_a_path_to_an_mjcf_file_is_loaded(tmp_path, monkeypatch):
    path = tmp_path / "pendulum.xml"
    path.write_text(models.model_path("double_pendulum").read_text())
    for given in (path, str(path)):
        assert models.load(given).nv == 2 and models.model_path(given) == path
    monkeypatch.chdir(tmp_path)
    assert models.load("pendulum.xml").nv == 2           # relative to the working directory
    with pytest.raises(UnknownModelError, match="the MJCF file 'pendulum.xml' has none"):
        models.load("pendulum.xml", "scene")


def test_a_malformed_mjcf_file_carries_mujocos_message(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text('<mujoco><worldbody><body><geom size="0.1" typo="1"/></body></worldbody></mujoco>')
    message = rf"^MuJoCo cannot compile the MJCF file '{path}': XML Error: .*unrecognized attribute: 'typo'"
    with pytest.raises(InvalidModelError, match=message):
        models.load(path)
    path.write_text("<mujoco><worldbody>")
    with pytest.raises(InvalidModelError, match="MuJoCo cannot compile the MJCF file .*XML parse error"):
        models.load(str(path))
    with pytest.raises(UnknownModelError, match="no MJCF file '.*missing.xml': give the path of an existing MJCF file or a model name"):
        models.load(tmp_path / "missing.xml")


def test_tree_from_mujoco_takes_a_name_or_a_path(tmp_path):
    by_model = dyn.tree_from_mujoco(models.load("double_pendulum"))
    path = tmp_path / "pendulum.xml"
    path.write_text(models.model_path("double_pendulum").read_text())
    q = np.array([0.3, -0.5])
    for given in ("double_pendulum", path, str(path)):
        tree = dyn.tree_from_mujoco(given)
        assert tree.nv == 2
        np.testing.assert_array_equal(dyn.mass_matrix(tree, q), dyn.mass_matrix(by_model, q))
    with pytest.raises(UnknownModelError, match="unknown model 'double_pendulm'"):
        dyn.tree_from_mujoco("double_pendulm")


@pytest.mark.parametrize("given, hint", [(None, "NoneType$"), (3, "int$"), (b"double_pendulum", "bytes$"),
                                         ("data", r"MjData \(an MjData holds a state; pass its MjModel\)")])
def test_tree_from_mujoco_says_what_to_pass(given, hint):
    if given == "data":
        given = mujoco.MjData(models.load("double_pendulum"))
    with pytest.raises(InvalidArgumentError,
                       match=f"^tree_from_mujoco needs a mujoco.MjModel, a model name or the path of an MJCF file, got {hint}"):
        dyn.tree_from_mujoco(given)


def test_course_mirror_is_used_without_touching_the_environment(monkeypatch):
    monkeypatch.delenv("MENAGERIE_ROOT", raising=False)
    assert models.COURSE_MIRROR.is_dir()                 # the course layout: ../shared/menagerie beside the checkout
    assert models.load("robotstudio_so101").nv == 6
    assert models.model_path("franka_emika_panda").parent == models.COURSE_MIRROR / "franka_emika_panda"
    assert "MENAGERIE_ROOT" not in os.environ


def test_unknown_menagerie_entry_lists_the_entries():
    with pytest.raises(UnknownModelError, match="has no entry 'bogus'; available: .*so101"):
        models.load("robotstudio_so101", "bogus")


def test_unavailable_menagerie_robot_says_how_to_fix_it(monkeypatch, tmp_path):
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))
    with pytest.raises(ModelUnavailableError, match="network connection.*MENAGERIE_ROOT"):
        models.load("franka_emika_panda")


def _body(**change) -> dyn.Body:
    fields = dict(parent=-1, pos=np.zeros(3), rot=np.eye(3), joint="hinge", axis=np.array([0.0, 1.0, 0.0]),
                  anchor=np.zeros(3), mass=1.0, com=np.zeros(3), inertia=np.eye(3) * 0.01, name="link")
    fields.update(change)
    return dyn.Body(**fields)


@pytest.mark.parametrize("change, error, message", [
    (dict(joint="ball"), UnsupportedModelError, "unknown joint type 'ball'"),
    (dict(mass=-1.0), InvalidInertiaError, "mass -1.0 kg"),
    (dict(inertia=np.diag([0.01, 0.01, 0.05])), InvalidInertiaError, "triangle rule"),
    (dict(inertia=np.diag([-0.01, 0.01, 0.01])), InvalidInertiaError, "negative principal moment"),
    (dict(inertia=np.array([[0.01, 0.002, 0], [0, 0.01, 0], [0, 0, 0.01]])), InvalidInertiaError, "not symmetric"),
    (dict(axis=np.array([0.0, 2.0, 0.0])), InvalidModelError, "expected a unit vector"),
    (dict(rot=np.diag([1.0, 1.0, -1.0])), InvalidModelError, "not a rotation matrix"),
    (dict(pos=np.zeros(2)), ShapeError, "pos has 2 entries"),
    (dict(com=[0.0, np.nan, 0.0]), InvalidStateError, r"com\[1\] is nan"),
    (dict(ref=np.nan), InvalidStateError, r"body 'link' ref is nan"),
    (dict(ref="a"), ShapeError, "ref must be an array of one number"),
    (dict(mass="abc"), ShapeError, "mass must be an array of one number"),
    (dict(mass=[1.0, 2.0]), ShapeError, r"mass must have shape \(\)"),
    (dict(parent=0.5), InvalidModelError, "parent must be a body index"),
    (dict(parent="0"), InvalidModelError, "parent must be a body index"),
])
def test_invalid_bodies_are_refused(change, error, message):
    with pytest.raises(error, match=message):
        _body(**change)


def test_tree_needs_parents_before_children_and_one_armature_per_joint():
    with pytest.raises(InvalidModelError, match="parent 1; a parent must come before its child"):
        dyn.Tree([_body(), _body(parent=1)], np.zeros(2))
    with pytest.raises(ShapeError, match="armature has 1 entry, the model needs 2"):
        dyn.Tree([_body(), _body(parent=0)], np.zeros(1))


def test_singular_mass_matrix_is_named_not_a_bare_linalg_error():
    massless = dyn.Tree([_body(mass=0.0, inertia=np.zeros((3, 3)), joint="slide")], np.zeros(1))
    with pytest.raises(InvalidModelError, match="mass matrix is singular.*no armature"):
        dyn.forward_dynamics(massless, [0.0], [0.0], [1.0])


TEXT_OR_BOOL = [(["0.3", "-0.5"], r"strings \('0.3'\); physai does not parse text, convert it with float\(\) first"),
                (np.array(["0.3", "-0.5"]), r"strings \('0.3'\)"),
                ("0.3", r"strings \('0.3'\)"),
                ([True, False], r"booleans \(True\); physai does not read True/False as 1/0, convert them with float\(\)"),
                (np.array([True]), r"booleans \(True\)"),
                (np.array([False, True]), r"booleans \(False\)"),
                ([0.3, True], r"booleans \(True\)"),                      # numpy alone would make it [0.3, 1.0]
                ([[0.1, 0.2], [0.3, np.True_]], r"booleans \(True\)")]


@pytest.mark.parametrize("value, message", TEXT_OR_BOOL)
@pytest.mark.parametrize("where", ["dynamics.rnea", "engine.rnea", "integrators.step", "integrators.simulate"])
def test_strings_and_booleans_are_refused_not_parsed(tree, where, value, message):
    from physai import engine, integrators

    zero = np.zeros(2)
    calls = {"dynamics.rnea": lambda: dyn.rnea(tree, value, zero, zero),
             "engine.rnea": lambda: engine.rnea(engine.compile_tree(tree), zero, value, zero),
             "integrators.step": lambda: integrators.step(tree, zero, value, 1e-3, "rk4"),
             "integrators.simulate": lambda: integrators.simulate(tree, value, zero, 1e-3, 3)}
    name = {"engine.rnea": "qd", "integrators.step": "qd", "integrators.simulate": "q0"}.get(where, "q")
    with pytest.raises(ShapeError, match=rf"^{name} must be an array of .*, got {message}"):
        calls[where]()


def test_numbers_of_any_numeric_type_are_still_taken(tree):
    zero = np.zeros(2)
    expected = dyn.rnea(tree, [1.0, 2.0], zero, zero)
    for q in ([1, 2], (np.float32(1), np.int64(2)), np.array([1, 2], dtype=object), np.array([1, 2], dtype=np.int8)):
        np.testing.assert_array_equal(dyn.rnea(tree, q, zero, zero), expected)
