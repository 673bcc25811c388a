"""step_result(..., observe=...): MuJoCo's MjData fields after mj_step then mj_rnePostConstraint (Gymnasium's frame),
compared live with MuJoCo on Gymnasium's Ant, Humanoid, InvertedDoublePendulum and Pusher, the G1 standing in its scene
(contacts) and a scene with a weld and a connect (and xfrc_applied), for each integrator, one state and a batch of 3.

Bound: every field within 1e-12 of MuJoCo's relative to the field's largest entry (at least 1):
max |physai - MuJoCo| <= 1e-12 max(1, max |MuJoCo|); qacc's scale also counts MuJoCo's qacc_smooth (M^-1 qfrc_smooth),
since a body resting on contacts has qacc = qacc_smooth + M^-1 qfrc_constraint near 0 out of terms of the size of g
(the Humanoid standing: |qacc| <= 0.08, its difference 1.3e-12)."""

import copy
import gc
import os
import warnings
import weakref

import gymnasium
import mujoco
import numpy as np
import pytest

from physai import engine, integrators, models
from physai.exceptions import InvalidArgumentError, InvalidStateError, ShapeError, UnknownQuantityError

from helpers import run

ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
BOUND = 1e-12
INTEGRATORS = {"euler": 0, "rk4": 1, "implicit": 2, "implicitfast": 3, "discrete": 4}

#: a weld (box to the world) and a connect (two bodies) beside a floor, sites on bodies and on the world
EQUALITIES = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <site name="fixed" pos=".3 .2 .1"/>
    <body name="box" pos="0 0 .3">
      <freejoint/>
      <geom type="box" size=".05 .08 .04" mass="0.7"/>
      <site name="corner" pos=".05 .08 .04"/>
    </body>
    <body name="arm" pos=".4 0 .5">
      <joint name="hinge" axis="0 1 0"/>
      <geom type="capsule" size=".03" fromto="0 0 0 .2 0 0" mass="0.4"/>
      <body name="tip" pos=".2 0 0">
        <joint name="ball" type="ball"/>
        <geom type="sphere" size=".05" pos=".1 0 0" mass="0.3"/>
      </body>
    </body>
    <body name="hung" pos=".7 0 .5">
      <freejoint/>
      <geom type="sphere" size=".04" mass="0.2"/>
    </body>
  </worldbody>
  <equality>
    <weld body1="box" relpose="0 0 .28 1 0 0 0" solref="0.03 1"/>
    <connect body1="hung" body2="tip" anchor="0 0 0"/>
  </equality>
</mujoco>"""


def load(name: str) -> mujoco.MjModel:
    if name == "g1":
        return models.load("unitree_g1", "scene")
    if name == "equalities":
        return mujoco.MjModel.from_xml_string(EQUALITIES)
    return mujoco.MjModel.from_xml_path(os.path.join(ASSETS, name))


def start_states(m: mujoco.MjModel, count: int, seed: int = 0, keyframe: bool = False):
    """`count` states (q, qd, qacc_warmstart, ctrl) from a MuJoCo run (keyframe: standing from the first keyframe, its
    ctrl (the G1); else a random start, random controls), 3 steps apart after a warm-up that brings the contacts."""
    d, rng = mujoco.MjData(m), np.random.default_rng(seed)
    if keyframe:
        mujoco.mj_resetDataKeyframe(m, d, 0)
        warm_up = 20
    else:
        d.qpos[:] = m.qpos0 + 0.1 * rng.normal(size=m.nq)
        mujoco.mj_normalizeQuat(m, d.qpos)
        d.qvel[:] = rng.normal(size=m.nv)
        warm_up = 200 if m.nbody < 10 else 600                          # the Humanoid on its floor by then
    ctrl = d.ctrl.copy() if keyframe else rng.uniform(-1, 1, m.nu)
    states = []
    for k in range(warm_up + 3 * count):
        d.ctrl[:] = ctrl
        mujoco.mj_step(m, d)
        if k >= warm_up and (k - warm_up) % 3 == 0:
            states.append((d.qpos.copy(), d.qvel.copy(), d.qacc_warmstart.copy(), ctrl.copy()))
    return states


def mujoco_step(m, state, xfrc=None) -> mujoco.MjData:
    """d after mj_step then mj_rnePostConstraint from state (q, qd, warm start, ctrl), xfrc (nbody, 6) or None."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.ctrl[:] = state
    if xfrc is not None:
        d.xfrc_applied[:] = xfrc
    mujoco.mj_step(m, d)
    mujoco.mj_rnePostConstraint(m, d)
    return d


#: (model, integrator) whose step itself leaves mj_step's beyond the bound: the bound of the fields made with the step's
#: qacc. Pusher, discrete: its object resting on the table (slides with 3 contacts) gets a discrete-step qacc of about
#: -1.8e-8 m/s^2 where MuJoCo's is -6e-10 (the next q differs by 1.8e-12): the discrete solve's, not the observation's
#: (the other fields within BOUND; qacc is the step's own (qd' - qd) / h, checked below)
STEP_GAPS = {("pusher_v5.xml", "discrete"): 1e-7}
FROM_QACC = ("qacc", "cacc", "cfrc_int")


def assert_observed(observed: dict, refs: list, gap: float | None = None) -> dict:
    """Every field of observed ((N, ...) arrays) within BOUND of the MjDatas' (one per state; those made with qacc within
    gap if given); the errors by name."""
    errors = {}
    for name, value in observed.items():
        ref = np.array([getattr(d, name) for d in refs])
        assert value.shape == ref.shape, name
        scale = max(1.0, np.abs(ref).max(initial=0.0))
        if name == "qacc":                                             # qacc_smooth + M^-1 qfrc_constraint
            scale = max(scale, max(np.abs(d.qacc_smooth).max(initial=0.0) for d in refs))
        errors[name] = np.abs(value - ref).max(initial=0.0) / scale
        assert errors[name] <= (gap if gap and name in FROM_QACC else BOUND), (name, errors[name])
    return errors


MODELS = ["ant.xml", "humanoid.xml", "inverted_double_pendulum.xml", "pusher_v5.xml", "g1", "equalities"]


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
@pytest.mark.parametrize("name", MODELS)
def test_observed_fields_equal_mujocos_after_mj_step_and_rne_post_constraint(name, integrator):
    """One state and a batch of 3, every OBSERVABLE field within 1e-12 (relative to the field) of MjData's after
    mj_step + mj_rnePostConstraint; the next state as mj_step's too."""
    m = load(name)
    states = start_states(m, 3, keyframe=name == "g1")
    m.opt.integrator = INTEGRATORS[integrator]
    model = engine.from_mujoco(m)
    xfrc = None
    if name == "equalities":                                           # a push on the box and the hung sphere
        xfrc = np.zeros((m.nbody, 6))
        xfrc[1], xfrc[4] = (0.3, -0.2, 1.0, 0.01, 0.02, -0.03), (0.1, 0.0, -0.2, 0.0, 0.01, 0.0)
    refs = [mujoco_step(m, s, xfrc) for s in states]
    Q, QD, W, U = (np.array(x) for x in zip(*states))
    args = dict(integrator=integrator, xfrc_applied=None if xfrc is None else xfrc[1:], observe=integrators.OBSERVABLE)
    if not m.nu:
        U = [None] * len(Q)
    gap = STEP_GAPS.get((name, integrator))
    one = integrators.step_result(model, Q[0], QD[0], ctrl=U[0], qacc_warmstart=W[0], **args)
    assert_observed({k: v[None] for k, v in one.observed.items()}, refs[:1], gap)
    assert np.abs(one.q - refs[0].qpos).max() < (gap or 1e-12)
    batch = integrators.step_result(model, Q, QD, ctrl=U if m.nu else None, qacc_warmstart=W, **args)
    assert_observed(batch.observed, refs, gap)
    if integrator == "discrete":                      # the discrete step's qacc is its step map (qd' - qd) / h
        step_qacc = (batch.qd - QD) / m.opt.timestep
        assert np.abs(batch.observed["qacc"] - step_qacc).max() <= 1e-9 * max(1.0, np.abs(step_qacc).max())
    if name in ("ant.xml", "g1", "equalities"):
        assert max(d.ncon for d in refs) > 0                           # the contacts' part of cfrc_ext is tried


def test_no_observe_computes_nothing_and_an_unknown_name_is_named():
    m = load("inverted_double_pendulum.xml")
    model = engine.from_mujoco(m)
    r = integrators.step_result(model, model.qpos0, np.zeros(model.nv))
    assert r.observed == {}
    assert integrators.step_result(model, model.qpos0, np.zeros(model.nv), observe=()).observed == {}
    with pytest.raises(UnknownQuantityError, match="cfrc_ext"):
        integrators.step_result(model, model.qpos0, np.zeros(model.nv), observe=("cfrc_ext", "subtree_com"))


@pytest.mark.parametrize("integrator", ["euler", "rk4"])
def test_a_failed_state_of_a_reported_batch_has_nan_fields_and_the_others_are_as_alone(integrator):
    """Ant, 4 states from its run: state 1 with qd 1e300 diverges, state 3's ctrl is NaN. With on_divergence="report"
    and observe, their fields are NaN and the others' equal each stepped alone (1e-14)."""
    m = load("ant.xml")
    states = start_states(m, 4)
    model = engine.from_mujoco(m)
    Q, QD, W, U = (np.array(x) for x in zip(*states))
    QD[1, 6], U[3, 0] = 1e300, np.nan
    r = integrators.step_result(model, Q, QD, integrator=integrator, ctrl=U, qacc_warmstart=W, on_divergence="report",
                                observe=integrators.OBSERVABLE)
    assert r.status.failed == [1, 3]
    for name, value in r.observed.items():
        assert np.isnan(value[[1, 3]]).all(), name
        for n in (0, 2):
            alone = integrators.step_result(model, Q[n], QD[n], integrator=integrator, ctrl=U[n], qacc_warmstart=W[n],
                                            observe=(name,)).observed[name]
            assert np.abs(value[n] - alone).max(initial=0.0) <= 1e-14 * max(1.0, np.abs(alone).max(initial=0.0)), name


@pytest.mark.parametrize("integrator", ["euler", "rk4", "implicitfast", "discrete"])
@pytest.mark.parametrize("name", ["ant.xml", "humanoid.xml", "equalities"])
def test_the_compiled_step_observes_what_the_numpy_engine_does(name, integrator):
    """The compiled step's fields (cpp/observe.h, inside the step: no second collision or solve; its fast path, which
    runs here) equal the NumPy engine's within 1e-12 relative to each field, for a batch of 3 states."""
    m = load(name)
    states = start_states(m, 3, keyframe=name == "g1")
    m.opt.integrator = INTEGRATORS[integrator]
    model = engine.from_mujoco(m)
    Q, QD, W, U = (np.array(x) for x in zip(*states))
    U = U if m.nu else None
    dt, integ, damping, constraints = integrators.model_options(model)
    fast = integrators._compiled_step(model, Q, QD, dt, integ, U, None, damping, constraints, W, integrators.OBSERVABLE)
    assert fast is not None                                            # the compiled path gave them
    previous = engine.set_backend("numpy")
    try:
        reference = integrators.step_result(model, Q, QD, ctrl=U, qacc_warmstart=W, observe=integrators.OBSERVABLE)
    finally:
        engine.set_backend(previous)
    smooth = max(np.abs(mujoco_step(m, s).qacc_smooth).max() for s in states)    # qacc's scale (the module docstring)
    for name_, value in fast[4].items():
        ref = reference.observed[name_]
        scale = max(1.0, np.abs(ref).max(initial=0.0), smooth if name_ == "qacc" else 0.0)
        assert np.abs(value - ref).max(initial=0.0) <= BOUND * scale, name_


def test_body_quantities_outside_a_step_are_mj_forwards_then_rne_post_constraints():
    """integrators.body_quantities at N = 3 of the Ant's states (its contacts) and at one: every field within 1e-12
    (relative to the field) of MjData's after mj_forward + mj_rnePostConstraint."""
    m = load("ant.xml")
    states = start_states(m, 3)
    model = engine.from_mujoco(m)
    refs = []
    for q, qd, warm, ctrl in states:
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.ctrl[:] = q, qd, warm, ctrl
        mujoco.mj_forward(m, d)
        mujoco.mj_rnePostConstraint(m, d)
        refs.append(d)
    Q, QD, W, U = (np.array(x) for x in zip(*states))
    assert_observed(integrators.body_quantities(model, Q, QD, ctrl=U, qacc_warmstart=W), refs)
    one = integrators.body_quantities(model, Q[1], QD[1], ("cfrc_ext", "qacc"), ctrl=U[1], qacc_warmstart=W[1])
    assert set(one) == {"cfrc_ext", "qacc"}
    assert_observed({k: v[None] for k, v in one.items()}, refs[1:2])
    assert max(d.ncon for d in refs) > 0


#: a slide carrying a hinge, its spring's stiffness {k}, over a floor (the compiled step observes a model with contacts)
FAR_SLIDE = ('<mujoco><worldbody><geom type="plane" size="1 1 .1" pos="0 0 -5"/><body><joint type="slide" axis="1 0 0" '
             'stiffness="{k}"/><geom type="sphere" size=".1" mass="1"/><body pos="0 0 .5"><joint type="hinge" '
             'axis="0 1 0"/><geom type="sphere" size=".1" mass="1"/></body></body></worldbody></mujoco>')


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_slide_1e200_m_away_observes_as_mujoco_and_its_spring_pulls_with_minus_k_q(backend):
    """At q = 1e200 m on a slide the world's cinert is zero, MuJoCo's (mj_comPos; it was NaN, 0 (1e200)^2 from the world's
    offset to the tree's com, with numpy's warnings), and every field of body_quantities and of step_result's
    observation (the compiled loop's on the native backend) is within BOUND of MuJoCo's after mj_forward, mj_Euler
    (mj_step's checks refuse the state) and mj_rnePostConstraint. With a spring (k = 5) MuJoCo 4's qacc is NaN: its
    polynomial spring k q + 0 q^2 + 0 q^3 is 0 inf past |q| = 1.34e154 while -k q is 5e200. physai's qacc is the force's,
    MuJoCo's without the spring plus M^-1 (-k q, 0) (MuJoCo's M; 1e-12 relative), the fields made without it MuJoCo's."""
    q, qd = np.array([1e200, 0.3]), np.array([0.1, -0.2])
    expected = None                                    # the spring's qacc: the springless qacc + M^-1 (-k q, 0)
    for k in (0, 5):
        m = mujoco.MjModel.from_xml_string(FAR_SLIDE.format(k=k))
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_forward(m, d)
        stepped = copy.copy(d)
        mujoco.mj_Euler(m, stepped)
        for x in (d, stepped):
            mujoco.mj_rnePostConstraint(m, x)
        model = engine.from_mujoco(m)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            at = run(backend, integrators.body_quantities, model, q, qd)
            after = run(backend, integrators.step_result, model, q, qd, observe=integrators.OBSERVABLE).observed
        if k:                                          # MuJoCo's 0 inf; the fields made with qacc left out
            assert np.isnan(d.qfrc_spring).any() and np.isnan(d.qacc).all()
            for qacc in (at.pop("qacc"), after.pop("qacc")):
                assert np.abs(qacc - expected).max() <= 1e-12 * np.abs(expected).max()
            at, after = ({n: v for n, v in x.items() if n not in FROM_QACC} for x in (at, after))
        else:
            M = np.zeros((2, 2))
            mujoco.mj_fullM(m, d, M)
            expected = d.qacc + np.linalg.solve(M, [-5 * q[0], 0.0])
        assert_observed({n: v[None] for n, v in at.items()}, [d])
        assert_observed({n: v[None] for n, v in after.items()}, [stepped])


@pytest.mark.parametrize("name", ["half_cheetah.xml", "hopper.xml", "walker2d_v5.xml", "swimmer.xml", "reacher.xml",
                                  "humanoidstandup.xml", "inverted_pendulum.xml"])
def test_the_other_gymnasium_task_models_observe_as_mujoco_in_the_compiled_step(name):
    """The rest of Gymnasium's v5 task files, each with its own integrator and options, a batch of 3: the compiled
    step's fields (its fast path, which runs here) within 1e-12 of MuJoCo's after mj_step + mj_rnePostConstraint."""
    m = load(name)
    states = start_states(m, 3, keyframe=name == "g1")
    model = engine.from_mujoco(m)
    refs = [mujoco_step(m, s) for s in states]
    Q, QD, W, U = (np.array(x) for x in zip(*states))
    dt, integ, damping, constraints = integrators.model_options(model)
    fast = integrators._compiled_step(model, Q, QD, dt, integ, U, None, damping, constraints, W, integrators.OBSERVABLE)
    assert fast is not None
    assert_observed(fast[4], refs)


@pytest.mark.parametrize("name, frames", [("ant.xml", 5), ("walker2d_v5.xml", 4), ("humanoid.xml", 5),
                                          ("hopper.xml", 4)])
def test_step_frames_is_mj_step_of_nstep_frames_in_one_compiled_call(compiled_backend, name, frames):
    """integrators.step_frames (a vector environment's frame skip in one compiled call, ctrl held), a batch of 12 (lanes
    and the one-by-one run): the last frame's state and warm start as MuJoCo's mj_step(nstep=frames), its observed fields
    as MjData's after it and mj_rnePostConstraint (within 1e-10 relative: five frames' roundings, the 1e-12 of one step
    above), and within 1e-12 of `frames` calls of step_result carrying the warm start; bad frames named."""
    m = load(name)
    states = start_states(m, 12)
    model = engine.from_mujoco(m)
    Q, QD, W, U = (np.array(x) for x in zip(*states))
    r = integrators.step_frames(model, Q, QD, frames, ctrl=U, qacc_warmstart=W, observe=integrators.OBSERVABLE)
    assert r is not None and r.status.ok.all()
    refs = []
    for s in states:
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.ctrl[:] = s
        mujoco.mj_step(m, d, nstep=frames)
        mujoco.mj_rnePostConstraint(m, d)
        refs.append(d)
    for ours, field in ((r.q, "qpos"), (r.qd, "qvel"), (r.qacc_warmstart, "qacc_warmstart")):
        ref = np.array([getattr(d, field) for d in refs])
        assert np.abs(ours - ref).max(initial=0.0) <= 1e-10 * max(1.0, np.abs(ref).max(initial=0.0)), field
    for field, value in r.observed.items():
        ref = np.array([getattr(d, field) for d in refs])
        assert np.abs(value - ref).max(initial=0.0) <= 1e-10 * max(1.0, np.abs(ref).max(initial=0.0)), field
    q, qd, warm = Q, QD, W
    for frame in range(frames):
        last = integrators.step_result(model, q, qd, ctrl=U, qacc_warmstart=warm,
                                       observe=integrators.OBSERVABLE if frame == frames - 1 else None)
        q, qd, warm = last.q, last.qd, last.qacc_warmstart
    assert np.abs(r.q - q).max() <= 1e-12 and np.abs(r.qd - qd).max() <= 1e-12 * max(1.0, np.abs(qd).max())
    for field, value in r.observed.items():
        assert np.abs(value - last.observed[field]).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(value).max(initial=0.0)), field
    for bad in (0, -1, 2.0, True):
        with pytest.raises(InvalidArgumentError):
            integrators.step_frames(model, Q, QD, bad, ctrl=U)
    with pytest.raises(InvalidArgumentError, match="memory"):       # the frames' outputs, before anything is allocated
        integrators.step_frames(model, Q, QD, 2**40, ctrl=U)


@pytest.mark.parametrize("name, frames", [("ant.xml", 5), ("humanoid.xml", 5)])
def test_step_frames_forward_only_states_are_mj_forwards_in_the_same_call(compiled_backend, name, frames):
    """step_frames' forward_only (a vector environment's autoreset folded into its step's call), 12 states with 3
    marked (rows 2, 9, 11: a lanes' block cut short, one-by-one runs): the marked states' q, qd and warm start come back
    as given and their observed fields are MjData's after mj_forward + mj_rnePostConstraint at them (within 1e-12 of
    the fields, as body_quantities'); the others' state, warm start and fields are those of step_frames over them alone
    (within 1e-12: the same steps, some in another lanes' block). forward_only of another shape or dtype named."""
    m = load(name)
    states = start_states(m, 12)
    model = engine.from_mujoco(m)
    Q, QD, W, U = (np.array(x) for x in zip(*states))
    only = np.zeros(12, bool)
    only[[2, 9, 11]] = True
    r = integrators.step_frames(model, Q, QD, frames, ctrl=U, qacc_warmstart=W, observe=integrators.OBSERVABLE,
                                forward_only=only)
    assert r is not None and r.status.ok.all()
    assert (r.q[only] == Q[only]).all() and (r.qd[only] == QD[only]).all()
    assert (r.qacc_warmstart[only] == W[only]).all()
    refs = []
    for q, qd, warm, ctrl in (states[i] for i in np.flatnonzero(only)):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.ctrl[:] = q, qd, warm, ctrl
        mujoco.mj_forward(m, d)
        mujoco.mj_rnePostConstraint(m, d)
        refs.append(d)
    assert max(d.ncon for d in refs) > 0
    assert_observed({k: v[only] for k, v in r.observed.items()}, refs)
    alone = integrators.step_frames(model, Q[~only], QD[~only], frames, ctrl=U[~only], qacc_warmstart=W[~only],
                                    observe=integrators.OBSERVABLE)
    for ours, theirs in [(r.q, alone.q), (r.qd, alone.qd), (r.qacc_warmstart, alone.qacc_warmstart)] + \
            [(r.observed[k], alone.observed[k]) for k in alone.observed]:
        assert np.abs(ours[~only] - theirs).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(theirs).max(initial=0.0))
    for bad, error in ((only[:5], ShapeError), (only.astype(int), InvalidArgumentError),
                       (list(only), InvalidArgumentError)):
        with pytest.raises(error, match="forward_only"):
            integrators.step_frames(model, Q, QD, frames, ctrl=U, forward_only=bad)


def test_step_frames_leaves_a_model_with_activations_to_step_result():
    """step_frames has no act to carry between calls: a model with activation states (a filter actuator) gets None
    (step frame by frame with step_result, which takes and returns act), not steps from act = 0."""
    m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody><body><joint name="j" type="hinge"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body></worldbody>
      <actuator><general joint="j" dyntype="filter" dynprm="0.05"/></actuator></mujoco>""")
    model = engine.from_mujoco(m)
    assert m.na == 1
    assert integrators.step_frames(model, np.zeros((2, 1)), np.zeros((2, 1)), 2, ctrl=np.ones((2, 1))) is None


def test_a_dropped_model_is_collected_after_an_observed_compiled_step():
    """The compiled step's observation layout and body constants, made once per model, do not keep the model (nor its
    arrays) alive once the caller drops it."""
    m = load("inverted_double_pendulum.xml")
    model = engine.from_mujoco(m)
    dt, integ, damping, constraints = integrators.model_options(model)
    q, qd = model.qpos0[None], np.zeros((1, model.nv))
    assert integrators._compiled_step(model, q, qd, dt, integ, None, None, damping, constraints, None,
                                      integrators.OBSERVABLE) is not None           # the compiled path made them
    dropped = weakref.ref(model)
    del model
    gc.collect()
    assert dropped() is None, "the model outlives its last reference"


#: a slide on a child body under a body of mass 1: at q = 1e200 its tree's centre of mass is 0.5e200 m from both
FAR_CHILD = ('<mujoco><worldbody><body><joint type="hinge" axis="0 0 1"/><geom type="sphere" size=".1" pos=".1 0 0" '
             'mass="1"/><body pos="0 0 .5"><joint type="slide" axis="1 0 0"/><geom type="sphere" size=".1" mass="1"/>'
             '</body></body></worldbody></mujoco>')


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_body_quantities_refuse_by_name_a_state_whose_inertias_overflow(backend):
    """A slide 1e200 m out on a child body: the tree's composite inertia about its centre of mass (m |c|^2, c 0.5e200 m)
    overflows double precision, and MuJoCo's own cinert and qacc there are not finite: body_quantities raises
    InvalidStateError naming the field, without numpy's warnings (it returned NaN with them)."""
    m = mujoco.MjModel.from_xml_string(FAR_CHILD)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [0.0, 1e200], [0.1, 0.1]
    mujoco.mj_forward(m, d)
    assert not (np.isfinite(d.cinert).all() and np.isfinite(d.qacc).all())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidStateError, match=r"^cinert is not finite at state 0, index \(1, 0\) .* overflow double precision"):
            run(backend, integrators.body_quantities, engine.from_mujoco(m), d.qpos.copy(), d.qvel.copy())
