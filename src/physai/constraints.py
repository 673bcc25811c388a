"""Dynamics with constraints: joint limits, dry friction in joints, equality constraints and contacts, as MuJoCo's soft
constraints, forward (Newton's method) and inverse (closed form).

    result = constraints.forward_dynamics(model, q, qd, tau, contacts)     # mj_forward's qacc with constraints
    result.qacc, result.qfrc_constraint, result.efc_force, result.iterations, result.improvement
    inv = constraints.inverse_dynamics(model, q, qd, qacc, contacts)       # mj_inverse: inv.tau, inv.qfrc_constraint
    rows = constraints.rows(model, q, qd, contacts)                        # MuJoCo's efc_J, efc_aref, efc_R, efc_D, ...

The equation of motion with constraints is M qacc + c = tau + J^T f, f the constraint forces (efc_force), one per
constraint row (physai.engine.constraint explains the rows). Forward dynamics finds qacc and f together: qacc minimises
1/2 |qacc - M^-1 (tau - c)|_M^2 + s(J qacc - aref), the cost of MuJoCo's soft constraints (its Gauss principle).
Inverse dynamics takes qacc and computes f row by row, without a solver, then tau = M qacc + c - J^T f.
A model of MuJoCo 4's discrete integrator has qacc its step map (qd' - qd) / h instead, M + h B + h^2 K in M's place,
as mj_forward and mj_inverse then (forward_dynamics' and inverse_dynamics' docstrings).

tau is every force but the constraints': applied, passive and actuator forces (as in physai.engine.forward_dynamics);
inverse_dynamics' tau is MuJoCo's qfrc_inverse + qfrc_passive. q (nq,), qd, tau, qacc (nv,), or (N, ...) for N states.
contacts: a physai.collision.ContactSet (one state, or shared by a batch), a list of N of them, or None: physai's own
(physai.collision.detect at each q; none for a model without geoms that may touch; ContactSet.empty(model.nbody) for
none at all). Which constraints exist and the solver's settings come from the Model (from_mujoco reads them from the
MuJoCo model: model.opt).

On the compiled backend (physai.engine.backend == "native", the default when it is built) the rows, the solver and the
inverse run in C++ (cpp/constraint.h, cpp/solver.h, cpp/inverse.h), a batch on threads with each state's own contacts;
PHYSAI_BACKEND=numpy (or engine.set_backend("numpy")) runs the NumPy reference of physai.engine.constraint, solver and
inverse state by state. Both give the same results within rounding (tests/test_constraints_native.py).
"""

import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from physai import collision, engine, validation
from physai.engine import constraint, forward, inverse, model_checks, native, smooth, solver, tendon
from physai.engine.constraint import Rows
from physai.engine.contact import ContactSet
from physai.engine.data import StepInputs
from physai.engine.model import per_model
from physai.engine.smooth import tree_cholesky_solve
from physai.exceptions import (ConvergenceWarning, InvalidArgumentError, ShapeError, StiffRowWarning,
                               UnsupportedModelError)
from physai.integrators import warn_capped, model_options, step_inputs, step_matrix

__all__ = ["ForwardResult", "InverseResult", "Rows", "forward_dynamics", "inverse_dynamics", "rows"]


class _Later:
    """A value computed on its first use: a compiled call's rows, made by the rows kernel from the call's own inputs
    (the same code, the same numbers) only when asked for."""

    def __init__(self, compute):
        self.compute, self.value, self.done = compute, None, False

    def get(self):
        if not self.done:
            self.value, self.done, self.compute = self.compute(), True, None
        return self.value


@dataclass(frozen=True)
class ForwardResult:
    """Forward dynamics with constraints. One state: qacc (nv,) [rad/s^2 | m/s^2], qfrc_constraint (nv,) [N m | N],
    efc_force (nefc,) (MuJoCo's efc_force), iterations (int), improvement (the last iteration's scaled cost decrease,
    MuJoCo's solver_improvement), rows (Rows). With constraint islands (model.opt.island, MuJoCo's default) each island is
    solved alone and MuJoCo reports per island (solver_niter[k]): iterations and improvement are the largest over the
    islands (an iteration limit reached by any island shows; forward_dynamics warns when any island stops unconverged).
    A batch of N: qacc and qfrc_constraint (N, nv), iterations and improvement (N,), efc_force and rows lists of N (each
    state has its own rows). On the compiled backend the rows are computed when first read."""

    qacc: np.ndarray
    qfrc_constraint: np.ndarray
    efc_force: object
    iterations: object
    improvement: object
    _rows: object = field(repr=False)

    @property
    def rows(self):
        return self._rows.get() if isinstance(self._rows, _Later) else self._rows


@dataclass(frozen=True)
class InverseResult:
    """Inverse dynamics with constraints. One state: tau (nv,) = MuJoCo's qfrc_inverse + qfrc_passive [N m | N],
    qfrc_constraint (nv,), efc_force (nefc,), rows (Rows); a batch: (N, nv) arrays and lists of N. On the compiled
    backend the rows are computed when first read."""

    tau: np.ndarray
    qfrc_constraint: np.ndarray
    efc_force: object
    _rows: object = field(repr=False)

    @property
    def rows(self):
        return self._rows.get() if isinstance(self._rows, _Later) else self._rows


def _contact_sets(model, contacts, n: int, batch) -> list:
    """One ContactSet per state: None (no contacts), one set (every state), or a list of N sets."""
    if contacts is None:
        return [None] * n
    if isinstance(contacts, ContactSet):
        contacts.check_model(model)
        return [contacts] * n
    if isinstance(contacts, (list, tuple)) and all(isinstance(c, ContactSet) for c in contacts):
        if batch is None or len(contacts) != n:
            raise ShapeError(f"contacts is a list of {len(contacts)} contact sets; it needs one per state "
                             f"({'a batch of ' + str(n) if batch is not None else 'one state: pass the ContactSet itself'})")
        for c in contacts:
            c.check_model(model)
        return list(contacts)
    raise InvalidArgumentError(f"contacts must be a physai.collision.ContactSet, a list of one per state, or None; got "
                               f"{type(contacts).__name__}")


def _eq_active(model, eq_active):
    if eq_active is None:
        return model.eq_active0
    active = np.asarray(eq_active)
    if active.shape != model.eq_active0.shape or active.dtype != bool:
        raise ShapeError(f"eq_active must be {len(model.eq_active0)} booleans (one per equality), got {active.dtype} of shape "
                         f"{active.shape}")
    return active


def _array_batch(model, q) -> int | None:
    """N for q a float64 array (N, nq), N > 0, counted without a check of its values (the compiled kernels check them);
    None for anything else (data(model) validates it)."""
    if type(q) is np.ndarray and q.dtype == np.float64 and q.ndim == 2 and q.shape[1] == model.nq and len(q):
        return len(q)
    return None


def _compiled_contacts(model, contacts, q, data):
    """The contacts as the compiled kernels take them (constraint.contact_arrays), checked as _contact_sets checks them;
    for a list of sets, the number of states: _array_batch's, else data(model)'s (it validates the states)."""
    if contacts is None or isinstance(contacts, ContactSet):
        if contacts is not None:
            contacts.check_model(model)
        return constraint.contact_arrays(contacts)
    batch = _array_batch(model, q)
    if batch is None:
        batch = data(model)[1]
    return constraint.contact_arrays(_contact_sets(model, contacts, 1 if batch is None else batch, batch))


def _states(model, data, contacts, eq_active):
    """(model, per-state (q, qd, x, d, rows), batch) with the velocity stages of each state done in its own Data."""
    model = engine.as_model(model)
    (Q, QD, X), batch = data(model)
    n = Q.shape[1]
    sets = _contact_sets(model, contacts, n, batch)
    active = _eq_active(model, eq_active)
    out = []
    for k in range(n):
        q, qd, x = Q[:, k], QD[:, k], X[:, k]
        d = engine.Data(model)
        smooth.velocity_stages(model, d, q[:, None], qd[:, None])
        out.append((q, qd, x, d, constraint.rows(model, d, q, qd, sets[k], active)))
    return model, out, batch


def _detected(model, q, contacts):
    """contacts, or physai's own at q (collision.detect: a set for one state, a list for N) when None and the model has
    geoms that may touch."""
    if contacts is None and collision.has_contacts(model):
        return collision.detect(model, q)
    return contacts


def rows(model, q, qd, contacts: ContactSet | None = None, eq_active=None, *, ctrl=None, act=None) -> Rows:
    """The constraint rows of one state (q (nq,), qd (nv,)) with the given contacts (None: physai's own): MuJoCo's
    efc_J, efc_pos, efc_margin, efc_type, efc_id, efc_diagA, efc_R, efc_D, efc_vel and efc_aref
    (physai.engine.constraint.Rows). eq_active: (neq,) booleans, MuJoCo's d.eq_active (default the model's eq_active0).
    A model of MuJoCo 4's discrete integrator: the rows at the step's end in the metric M + h B + h^2 K, as mj_forward's
    then (forward_dynamics' rows; compiled where its forward is, else the NumPy text), ctrl (nu,) and act (na,) as
    forward_dynamics takes them."""
    model = engine.as_model(model)
    contacts = _detected(model, q, contacts)
    q, qd = validation.vector("q", q, model.nq), validation.vector("qd", qd, model.nv)
    data = lambda m: validation.states(q=(q, m.nq), qd=(qd, m.nv), x=(np.zeros(m.nv), m.nv))   # noqa: E731
    if model.opt.integrator == "discrete":
        step = _compiled_discrete(model, *_discrete_inputs(model, ctrl, act))
        if step is not None:
            return constraint.compiled_rows(model, q, qd, _compiled_contacts(model, contacts, q, data),
                                            None if eq_active is None else _eq_active(model, eq_active), step)[0]
        (run, q1, qd1, _, M), = _discrete_runs(model, data, contacts, eq_active, ctrl, act)[0]
        return _discrete_rows(run, q1, qd1, M)[0]
    _refuse_metric_inputs(model, "they change no row", ctrl=ctrl, act=act)
    if native.on and native.runs(model):
        return constraint.compiled_rows(model, q, qd, _compiled_contacts(model, contacts, q, data),
                                        None if eq_active is None else _eq_active(model, eq_active))[0]
    return _states(model, data, contacts, eq_active)[1][0][4]


def forward_dynamics(model, q, qd, tau, contacts=None, *, qacc_warmstart=None, eq_active=None, tolerance: float | None = None,
                     iterations: int | None = None, ctrl=None, act=None) -> ForwardResult:
    """Accelerations and constraint forces at (q, qd) under the non-constraint forces tau: MuJoCo's mj_forward with its
    constraints (qacc, qfrc_constraint, efc_force), solved by model.opt.solver: Newton's method as mj_solNewton, or
    projected Gauss-Seidel as mj_solPGS, or conjugate gradients as mj_solCG (compiled on the native backend).
    contacts: see the module
    docstring (None: physai's own, physai.collision.detect).

    qacc_warmstart: (nv,) or (N, nv), where the solver starts when its cost is lower than at the unconstrained
    accelerations (MuJoCo's qacc_warmstart: the previous step's qacc; with islands chosen once on all rows, each island
    starting from its dofs' part). tolerance and iterations default to model.opt's.
    A state whose solve reaches the iteration limit (or a line search its ls_iterations without improving) before the
    tolerance, or noslip's sweeps reach opt.noslip_iterations before opt.noslip_tolerance, warns
    (physai.exceptions.ConvergenceWarning, with its last improvement; iterations count the solver's and noslip's
    together, as MuJoCo's solver_niter) and returns the last iterate, as MuJoCo does; MuJoCo itself sets no warning
    (no mjtWarning is about the solver): it leaves solver_niter = iterations.
    A state with rows whose R is at its floor MINVAL (diagApprox 0: contacts of bodies that cannot translate, their
    normal J exactly zero) warns (physai.exceptions.StiffRowWarning): their forces are aref / MINVAL, and CG and PGS stop
    far from the minimum there, MuJoCo's too; the result is still MuJoCo's.
    Stepping (physai.integrators) warns not, as mj_step.

    A model of MuJoCo 4's discrete integrator (model.opt.integrator "discrete"): qacc is its step map (qd' - qd) / h,
    h = model.opt.timestep, as mj_forward's then, not the continuous acceleration: the discrete step's own solve
    (physai.engine.forward.discrete_acceleration) in the metric M + h B + h^2 K with the rows at the step's end, tau in
    the place of its f + c; ctrl (nu,) and act (na,) set the actuators' terms of that metric (their forces are in
    tau): required (InvalidArgumentError) when the actuators have gains or biases on length or velocity, else zeros by
    default; a batch of states shares one ctrl and one act (ShapeError for (N, nu)). On the compiled backend its step's
    compiled solve (cpp/forward.h's discrete_acceleration) unless that step hands the model to the NumPy engine
    (muscles, the ellipsoid fluid: forward.compiled_discrete), its rows made again by the compiled rows kernel when
    read (the same code: cpp/simulate.h's solve_rows). Its
    smooth solve in a metric with tendon or servo terms (conjugate gradients, as MuJoCo's) stopped at `iterations`
    warns (ConvergenceWarning, solver.metric_pcg's words; MuJoCo counts mjWARN_INERTIA): the NumPy text once per such
    state, the compiled call once, naming the first such state of a batch and how many met it.
    """
    model = engine.as_model(model)
    if tolerance is not None:
        tolerance = validation.number("tolerance", tolerance, "scaled cost", positive=True)
    if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or
                                   not 1 <= iterations <= model_checks.MAX_ITERATIONS):
        raise InvalidArgumentError(f"iterations must be a whole number in 1..{model_checks.MAX_ITERATIONS} (MuJoCo's int), "
                                   f"got {iterations!r}")
    data = _data(q, qd, tau)
    contacts = _detected(model, q, contacts)
    if model.opt.integrator == "discrete":
        step = _compiled_discrete(model, *_discrete_inputs(model, ctrl, act))
        if step is not None:
            return _finite(_compiled_forward(model, q, qd, tau, contacts, qacc_warmstart, eq_active, tolerance, iterations,
                                             data, step), "qacc")
        return _finite(_discrete_forward(model, data, contacts, qacc_warmstart, eq_active, tolerance, iterations, ctrl,
                                         act), "qacc")
    _refuse_metric_inputs(model, "pass the actuators' forces in tau", ctrl=ctrl, act=act)
    if native.on and native.compiled_solver(model):
        return _finite(_compiled_forward(model, q, qd, tau, contacts, qacc_warmstart, eq_active, tolerance, iterations, data),
                       "qacc")
    with np.errstate(over="ignore", invalid="ignore"):           # an overflow is named by _finite, not by numpy
        model, states, batch = _states(model, data, contacts, eq_active)
        warm = _warmstart(model, qacc_warmstart, batch)
        results = []
        for k, (q1, qd1, tau1, d, r) in enumerate(states):
            M = smooth.crb(model, d)[:, :, 0] + tendon.armature(model, d, q1)
            c = smooth.rne(model, d, qd1[:, None], None)[:, 0]
            start = None if warm is None else warm[:, k if warm.shape[1] > 1 else 0]
            sol = solver.solve_with(model, r, M, tau1 - c, start, tolerance, iterations)
            if not sol.converged:
                _warn(sol.iterations, sol.improvement, k, batch, model.opt.noslip_iterations)
            results.append((sol, r))
    _warn_floor(model, _near_floor(model, [r.contact_body for _, r in results]), lambda k: results[k][1], len(results),
                batch, stacklevel=3)
    return _finite(_forward_result(results, batch), "qacc")


def _data(q, qd, tau):
    """data(model): the states (q, qd, tau) checked against the model's sizes (validation.states)."""
    return lambda m: validation.states(q=(q, m.nq), qd=(qd, m.nv), tau=(tau, m.nv))


def _compiled_discrete(model, inputs, act):
    """The compiled kernels' discrete option (fields, ctrl, act) of a call on a discrete model (solver.compiled_forward's
    discrete), from its checked inputs (_discrete_inputs: StepInputs, act: copies, the call's rows are made later from
    them); None where the NumPy engine runs the call: no compiled backend, or a model or actuators the compiled engine
    does not run or whose metric its step does not model (muscles, the ellipsoid fluid: _discrete_model's compiled)."""
    if not (native.on and _discrete_model(model).compiled):
        return None
    return native.step_fields(model, "discrete", float(model.opt.timestep), False, True), inputs.ctrl, act


def _discrete_forward(model, data, contacts, qacc_warmstart, eq_active, tolerance, iterations, ctrl, act) -> ForwardResult:
    """forward_dynamics for a model of the discrete integrator: each state's step map, by the discrete step's solve
    (forward.discrete_acceleration) with f = tau - c."""
    runs, batch = _discrete_runs(model, data, contacts, eq_active, ctrl, act)
    warm = _warmstart(model, qacc_warmstart, batch)
    results = []
    for k, (run, q, qd, tau, M) in enumerate(runs):
        run.tolerance, run.iterations = tolerance, iterations
        if warm is not None:
            run.warmstart = warm[:, k if warm.shape[1] > 1 else 0]
        qacc = forward.discrete_acceleration(run, q, qd, M, tau - engine.bias(model, q, qd))   # f = tau - c
        sol, r = run.solved
        if not sol.converged:
            _warn(sol.iterations, sol.improvement, k, batch, model.opt.noslip_iterations)
        results.append((replace(sol, qacc=qacc), r))   # the free bodies' blocks solved again
    _warn_floor(model, _near_floor(model, [r.contact_body for _, r in results]), lambda k: results[k][1], len(results),
                batch, stacklevel=4)
    return _forward_result(results, batch)


def _refuse_metric_inputs(model, hint: str, **inputs) -> None:
    """InvalidArgumentError naming the inputs given (not None) of `inputs` (ctrl, act), which set the discrete
    integrator's metric; its callers call it once their discrete model's branch has returned (model's integrator is
    another)."""
    given = [name for name, x in inputs.items() if x is not None]
    if given:
        raise InvalidArgumentError(f"{' and '.join(given)} set{'s' * (len(given) == 1)} the discrete integrator's metric; "
                                   f"this model's integrator is {model.opt.integrator!r}: {hint}")


@dataclass(frozen=True)
class _DiscreteModel:
    """What a call on a model of the discrete integrator reads of the model alone (_discrete_model): its actuators
    (None: none) with their nu and na; servo: ctrl and act required (their actuators add to the metric,
    forward.servo_couplings, and the metric takes them, not forward.explicit_couplings); compiled: the compiled
    kernels run its calls when the compiled backend is on (native.compiled_solver and native.runs with its actuators,
    forward.compiled_discrete: not for muscles or the ellipsoid fluid)."""

    actuators: object
    nu: int
    na: int
    servo: bool
    compiled: bool


@per_model
def _discrete_model(model) -> _DiscreteModel:
    """The model's _DiscreteModel, after the checks of the model a discrete step makes (model_options, step_inputs'
    of its actuators): made once per model; a model they refuse raises at each call, as before, and is not kept."""
    model_options(model)
    acts = step_inputs(model, None, None, None, None).actuators
    return _DiscreteModel(acts, 0 if acts is None else acts.nu, 0 if acts is None else acts.na,
                          forward.servo_couplings(acts) and not forward.explicit_couplings(model),
                          bool(native.compiled_solver(model) and native.runs(model, acts) and
                               forward.compiled_discrete(model, acts)))


def _checked_copy(name: str, x, n: int) -> np.ndarray:
    """x as a finite float vector of n entries (validation.vector), never the caller's own array: a call's rows are made
    from it after the call returns."""
    checked = validation.vector(name, x, n)
    return checked.copy() if np.may_share_memory(checked, x) else checked     # x, a view of it, or a subclass's base


def _discrete_inputs(model, ctrl, act):
    """(StepInputs, act) of a call on a model of the discrete integrator, checked (what its step refuses refused): the
    model once (_discrete_model), the call's ctrl (nu,) and act (na,) each time, copies (_checked_copy): one of each for
    all states (ShapeError for a batch of them), required (InvalidArgumentError) when _DiscreteModel.servo; ctrl zeros
    when None, act None."""
    of = _discrete_model(model)
    for name, x in (("ctrl", ctrl), ("act", act)):
        if x is not None and np.ndim(x) > 1:
            raise ShapeError(f"{name} has shape {np.shape(x)}: a batch of states shares one ctrl (nu,) and one act (na,); "
                             "for different ones call once per state")
    missing = [name for name, x, n in (("ctrl", ctrl, of.nu), ("act", act, of.na)) if of.servo and x is None and n]
    if missing:
        raise InvalidArgumentError(f"{' and '.join(missing)} required: this discrete model's actuators have gains or "
                                   "biases on length or velocity, whose terms in the step's metric M + h B + h^2 K "
                                   "depend on ctrl and act (their slopes and saturation); pass MuJoCo's d.ctrl (nu,) "
                                   "and d.act (na,)")
    if ctrl is not None:                        # the compiled path reads ctrl as given: checked here, for both engines
        ctrl = _checked_copy("ctrl", ctrl, of.nu)
    if of.actuators is None:                    # only an empty ctrl passed: check_actuators' None
        ctrl = None
    elif ctrl is None:
        ctrl = np.zeros(of.nu)
    return StepInputs(of.actuators, ctrl, None, None), None if act is None else _checked_copy("act", act, of.na)


def _discrete_runs(model, data, contacts, eq_active, ctrl, act, states=None):
    """([(run, q, qd, x, M)] one per state (of `states`, a list; None: every state), batch) for a model of the discrete
    integrator: each state's forward pipeline (engine.DynamicsEvaluator, with its contacts and eq_active) evaluated at
    (q, qd), M with the tendons' armature and the actuators posed at q as the step's; x the state's tau or qacc."""
    inputs, act = _discrete_inputs(model, ctrl, act)
    (Q, QD, X), batch = data(model)
    sets, active = _contact_sets(model, contacts, Q.shape[1], batch), _eq_active(model, eq_active)
    runs = []
    for k in range(Q.shape[1]) if states is None else states:
        q, qd = Q[:, k], QD[:, k]
        run = engine.DynamicsEvaluator(model, model.opt.timestep, inputs, constrained=True, act=act)
        run.detected, run.eq_active = (q.copy(), sets[k]), active
        runs.append((run, q, qd, X[:, k], run.evaluate(q, qd, energy=False)[0]))
    return runs, batch


def _finite(result, what: str):
    """result, or InvalidStateError naming `what` (result's qacc or tau) and the first state where it is not finite:
    finite inputs that overflowed (velocities of 1e300)."""
    x = getattr(result, what)
    validation.finite_result(what, x if x.ndim > 1 else x[None], state_axis=0)
    return result


def _warmstart(model, qacc_warmstart, batch):
    """qacc_warmstart checked: (nv, n) with the state index last, or None."""
    if qacc_warmstart is None:
        return None
    (warm,), warm_batch = validation.states(qacc_warmstart=(qacc_warmstart, model.nv))
    if warm_batch is not None and warm_batch != batch:
        raise ShapeError(f"qacc_warmstart has {warm_batch} states, q has {batch or 'one'}: pass one start (nv,) or one "
                         "per state")
    return warm


def _warn(iterations: int, improvement: float, k: int, batch, noslip: int = 0) -> None:
    """The ConvergenceWarning of state k; with noslip sweeps (opt.noslip_iterations > 0) the iterations count the
    solver's and noslip's together (MuJoCo's solver_niter), the improvement is the last sweep's of the one that
    stopped at its limit."""
    where = f" (state {k})" if batch is not None else ""
    what = f"the constraint solver and its noslip sweeps (at most {noslip})" if noslip else "the constraint solver"
    warnings.warn(f"{what} stopped after {iterations} iterations{where} before reaching its tolerance; "
                  f"last improvement {improvement:.3g}: raise iterations or check the model", ConvergenceWarning, stacklevel=3)


def _near_floor(model, bodies: list) -> list:
    """The states (indices) whose contacts (bodies: each state's contact bodies (nc, 2)) touch a body that may give rows
    whose R is at its floor MINVAL (the kept floor_bodies, physai.engine.setconst): the states _warn_floor looks at."""
    floor_bodies = model.kept("floor_bodies")
    if not len(floor_bodies) or not bodies:
        return []
    is_floor = np.zeros(model.nbody + 1, bool)                             # the last: the world's -1
    is_floor[floor_bodies] = True
    state = np.repeat(np.arange(len(bodies)), [len(b) for b in bodies])
    return np.unique(state[is_floor[np.concatenate(bodies)].any(axis=1)]).tolist()


def _warn_floor(model, near: list, rows, states: int, batch, stacklevel: int) -> None:
    """One StiffRowWarning for the states whose rows have R at its floor MINVAL (constraint.at_floor on their rows
    concatenated), naming the first. Looked at: the states near (_near_floor) of the call's `states`, their Rows given
    by rows(k); stacklevel: the caller of forward_dynamics'."""
    if not near:
        return
    found = [rows(k) for k in near]
    nefc = [r.nefc for r in found]
    first = np.cumsum([0] + nefc)                                          # each state's first row in the concatenation
    contact_row = np.concatenate([r.contact_row for r in found])
    contact_row = np.where(contact_row >= 0, contact_row + np.repeat(first[:-1], [len(r.contact_row) for r in found]), -1)
    floor = constraint.at_floor(np.concatenate([r.R for r in found]), np.concatenate([r.type for r in found]), contact_row,
                                np.concatenate([r.contact_mu for r in found]))
    hit = np.unique(np.repeat(np.arange(len(found)), nefc)[floor])        # the near states with such rows
    if not len(hit):
        return
    k, floor = near[hit[0]], np.flatnonzero(floor[first[hit[0]]:first[hit[0] + 1]])
    where = f" of state {k} ({len(hit)} of {states} states have such rows)" if batch is not None else ""
    warnings.warn(f"{len(floor)} constraint rows{where} have R at its floor MINVAL (the first: row {floor[0]}): their diagApprox "
                  "is 0, as a contact's between bodies that cannot translate (its normal J exactly zero); their forces are "
                  "aref / MINVAL, not physical, and their stiffness 1 / MINVAL leaves CG and PGS far from the minimum, "
                  "MuJoCo's own too: exclude such contacts (contype, conaffinity, <exclude>)", StiffRowWarning, stacklevel=stacklevel)


def _compiled_forward(model, q, qd, tau, contacts, qacc_warmstart, eq_active, tolerance, iterations, data,
                      discrete=None) -> ForwardResult:
    """forward_dynamics on the compiled backend (solver.compiled_forward); discrete: a discrete model's step (the
    kernels' option, _compiled_discrete's), its rows made again by the rows kernel with it when read and for the
    warning."""
    sets = _compiled_contacts(model, contacts, q, data)
    active = None if eq_active is None else _eq_active(model, eq_active)
    warm = qacc_warmstart                     # (nv,) for every state or (N, nv): the kernel checks the values it reads
    if warm is not None and not (type(warm) is np.ndarray and warm.dtype == np.float64 and
                                 warm.shape in ((model.nv,), (_array_batch(model, q), model.nv))):
        if np.ndim(warm) == 1:
            warm = validation.vector("qacc_warmstart", warm, model.nv)
        else:
            warm = np.ascontiguousarray(_warmstart(model, warm, data(model)[1]).T)
    opt = model.opt
    near = _near_floor(model, [] if sets is None else [s[1][:, 1:3] for s in sets])   # each set's contact bodies
    # the solve's own rows when at least half the states are near (every state, for one set), else the near states'
    # rows made again after it: the solve's rows cost every state's dense J
    from_solve = discrete is None and bool(near) and (len(sets) == 1 or 2 * len(near) >= len(sets))
    out = solver.compiled_forward(model, q, qd, tau, sets, active, warm, opt.tolerance if tolerance is None else tolerance,
                                  opt.iterations if iterations is None else iterations, rows=from_solve, own_force=True,
                                  discrete=discrete)
    qacc, qfrc, forces, its, improvement, converged = out[:6]     # from_solve: the rows of the solve, out[6]
    batch = len(its) if qacc.ndim == 2 else None
    if discrete is not None:                                      # its smooth solve at its cap: out[6], -1 none
        warn_capped(model, np.where(out[6] >= 0, 0, -1), out[6], "forward", stacklevel=3,
                     iterations=opt.iterations if iterations is None else iterations)
    if near and len(sets) == 1:                                   # one set for every state: every state near
        near = list(range(len(its)))
    if not converged.all():
        for k in np.flatnonzero(~converged).tolist():
            _warn(int(its[k]), float(improvement[k]), k, batch, opt.noslip_iterations)
    rows_ = _later_rows(model, q, qd, sets, active, batch, discrete)
    if from_solve:
        rows_of = out[6].__getitem__
    elif near:
        found = _rows_of(model, q, qd, sets, active, batch, near, discrete)
        rows_of = dict(zip(near, found)).__getitem__
    _warn_floor(model, near, rows_of if near else None, len(its), batch, stacklevel=4)
    if batch is None:
        return ForwardResult(qacc, qfrc, forces[0], int(its[0]), float(improvement[0]), rows_)
    return ForwardResult(qacc, qfrc, forces, its, improvement, rows_)


def _rows_of(model, q, qd, sets, active, batch, states: list, discrete=None) -> list:
    """The compiled rows (a list of Rows) of the given states of a compiled call (sets: one per state, or one for all;
    discrete: a discrete model's step, _compiled_discrete's)."""
    if batch is None:
        return constraint.compiled_rows(model, q, qd, sets, active, discrete)
    Q, QD = np.asarray(q, float)[states], np.asarray(qd, float)[states]
    return constraint.compiled_rows(model, Q, QD, sets if len(sets) == 1 else [sets[k] for k in states], active, discrete)


def _later_rows(model, q, qd, sets, active, batch, discrete=None) -> _Later:
    """The rows of a compiled call's states (discrete: a discrete model's step, _compiled_discrete's, its ctrl and act
    the call's copies), computed on first use from copies of its inputs (q, qd, eq_active; the contacts' arrays are
    the call's own, ContactSet.packed())."""
    q, qd, active = np.array(q, float), np.array(qd, float), None if active is None else active.copy()
    if batch is None:
        return _Later(lambda: constraint.compiled_rows(model, q, qd, sets, active, discrete)[0])
    return _Later(lambda: constraint.compiled_rows(model, q, qd, sets, active, discrete))


def _forward_result(results, batch) -> ForwardResult:
    if batch is None:
        sol, r = results[0]
        return ForwardResult(sol.qacc, sol.qfrc_constraint, sol.efc_force, sol.iterations, sol.improvement, r)
    return ForwardResult(np.array([s.qacc for s, _ in results]), np.array([s.qfrc_constraint for s, _ in results]),
                         [s.efc_force for s, _ in results], np.array([s.iterations for s, _ in results]),
                         np.array([s.improvement for s, _ in results]), [r for _, r in results])


def inverse_dynamics(model, q, qd, qacc, contacts=None, *, discrete: bool = False, ctrl=None, eq_active=None,
                     act=None) -> InverseResult:
    """The non-constraint forces tau that give qacc at (q, qd), with the constraint forces computed row by row from
    J qacc - aref (no solver): MuJoCo's mj_inverse, tau = qfrc_inverse + qfrc_passive = M qacc + c - J^T f.

    A model of MuJoCo 4's discrete integrator (model.opt.integrator "discrete") inverts its step map whatever
    `discrete` says (MuJoCo implies invdiscrete then): qacc = (qd' - qd) / h, tau = (M + h B + h^2 K) qacc + c + h K qd
    - J^T f, f from the rows at the step's end (forward_dynamics' discrete solve inverted; ctrl (nu,) and act (na,) set
    the actuators' terms of the metric, required and shared by a batch as forward_dynamics says); on the compiled
    backend by cpp/inverse.h's discrete_state where forward_dynamics' discrete solve is compiled, else by the NumPy
    text. act is for such a model only (InvalidArgumentError otherwise). A force-limited servo saturates
    as in mj_forward, by its force at the state; mj_inverse reads that from d.actuator_force as the last mj_forward
    left it (zero in a new MjData).
    discrete=True: MuJoCo's invdiscrete: qacc is the finite-difference acceleration of one step of model.opt's
    integrator (euler, implicit or implicitfast) and the forces are those of the continuous acceleration
    M^-1 (M - h D) qacc that step applied (physai.integrators.step_matrix, with the model's actuators at ctrl (nu,),
    default zeros; rk4 has none: UnsupportedModelError).
    """
    model = engine.as_model(model)
    discrete = validation.flag("discrete", discrete)
    data = lambda m: validation.states(q=(q, m.nq), qd=(qd, m.nv), qacc=(qacc, m.nv))   # noqa: E731
    contacts = _detected(model, q, contacts)
    if model.opt.integrator == "discrete":
        step = _compiled_discrete(model, *_discrete_inputs(model, ctrl, act))
        if step is not None:
            return _finite(_compiled_inverse(model, q, qd, qacc, contacts, False, None, eq_active, data, step), "tau")
        return _finite(_discrete_inverse(model, data, contacts, eq_active, ctrl, act), "tau")
    _refuse_metric_inputs(model, "discrete=True's step takes the actuators' ctrl alone", act=act)
    if native.on and native.runs(model):
        return _finite(_compiled_inverse(model, q, qd, qacc, contacts, discrete, ctrl, eq_active, data), "tau")
    with np.errstate(over="ignore", invalid="ignore"):           # an overflow is named by _finite, not by numpy
        model, states, batch = _states(model, data, contacts, eq_active)
        out = []
        for q1, qd1, a, d, r in states:
            M = smooth.crb(model, d)[:, :, 0] + tendon.armature(model, d, q1)
            c = smooth.rne(model, d, qd1[:, None], None)[:, 0]
            Ma = M @ a
            if discrete:
                Ma = _discrete_force(model, q1, qd1, a, M, ctrl)
                a = tree_cholesky_solve(model, M[:, :, None], Ma[:, None])[:, 0]
            f = inverse.inverse_force(r, a)
            qfrc = constraint.rows_transpose_times(r, f)
            out.append((Ma + c - qfrc, qfrc, f, r))
    return _finite(_inverse_result(out, batch), "tau")


def _inverse_result(out: list, batch) -> InverseResult:
    """The InverseResult of each state's (tau, qfrc_constraint, efc_force, rows): one state's, or N stacked."""
    if batch is None:
        return InverseResult(*out[0])
    return InverseResult(np.array([o[0] for o in out]), np.array([o[1] for o in out]), [o[2] for o in out],
                         [o[3] for o in out])


def _discrete_inverse(model, data, contacts, eq_active, ctrl, act) -> InverseResult:
    """inverse_dynamics for a model of the discrete integrator: tau = M^ qacc + c + h K qd - J^T f, M^ = M + h B + h^2 K
    and the rows at the step's end as the discrete step's (forward.discrete_acceleration), f row by row."""
    runs, batch = _discrete_runs(model, data, contacts, eq_active, ctrl, act)
    out = []
    for run, q, qd, a, M in runs:
        r, metric = _discrete_rows(run, q, qd, M)
        f = inverse.inverse_force(r, a)
        qfrc = constraint.rows_transpose_times(r, f)
        Ma = metric.M_hat @ a
        for i, A_free in run.free_blocks(q, qd, M, metric.skipped(r), actuator_damping=False):
            Ma[i:i + 6] = A_free @ a[i:i + 6]          # the free bodies the step solves in their own blocks: A a there
        out.append((Ma + engine.bias(model, q, qd) + run.h * metric.K @ qd - qfrc, qfrc, f, r))   # M^ a = tau - c - h K qd + J^T f
    return _inverse_result(out, batch)


def _discrete_rows(run, q, qd, M):
    """(rows, metric) of one state of a discrete model's run: the rows at the step's end in the step's metric
    M^ = M + h B + h^2 K (run.discrete_step_metric, forward.discrete_acceleration's)."""
    metric = run.discrete_step_metric(q, qd, M)
    return run.rows(q, qd, metric.M_hat, discrete=True), metric


def _compiled_inverse(model, q, qd, qacc, contacts, discrete: bool, ctrl, eq_active, data, step=None) -> InverseResult:
    """inverse_dynamics on the compiled backend (inverse.compiled_inverse); discrete: (M - h D) qacc and the
    continuous qacc M^-1 (M - h D) qacc of each state computed here, tau = (M - h D) qacc + c - J^T f as on the NumPy
    path; step: a discrete model's (_compiled_discrete's), its step map inverted by the kernel."""
    sets = _compiled_contacts(model, contacts, q, data)
    active = None if eq_active is None else _eq_active(model, eq_active)
    if not discrete:
        tau, qfrc, forces = inverse.compiled_inverse(model, q, qd, qacc, sets, active, step)
        batch = len(qfrc) if qfrc.ndim == 2 else None
    else:
        (Q, QD, A), batch = data(model)
        M = engine.mass_matrix(model, Q.T).reshape(-1, model.nv, model.nv)
        Ma = np.array([_discrete_force(model, Q[:, k], QD[:, k], A[:, k], M[k], ctrl) for k in range(Q.shape[1])])
        a = np.array([tree_cholesky_solve(model, M[k][:, :, None], Ma[k][:, None])[:, 0] for k in range(Q.shape[1])])
        if batch is None:
            Ma, a = Ma[0], a[0]
        _, qfrc, forces = inverse.compiled_inverse(model, Q.T if batch else Q[:, 0], QD.T if batch else QD[:, 0], a, sets,
                                                      active)
        tau = Ma + engine.bias(model, Q.T if batch else Q[:, 0], QD.T if batch else QD[:, 0]) - qfrc
    rows_ = _later_rows(model, q, qd, sets, active, batch, step)
    if batch is None:
        return InverseResult(tau, qfrc, forces[0], rows_)
    return InverseResult(tau, qfrc, forces, rows_)


def _discrete_force(model, q, qd, qacc, M, ctrl) -> np.ndarray:
    """(M - h D) qacc for model.opt's integrator and timestep: the force one step of it turns into qacc."""
    opt = model.opt
    if opt.integrator == "rk4":
        raise UnsupportedModelError("discrete inverse dynamics is not defined for rk4 (MuJoCo's mj_inverse refuses invdiscrete "
                                    "too); use physai.inverse.rk4_shooting")
    return step_matrix(model, q, qd, opt.timestep, opt.integrator, ctrl=ctrl, M=M, euler_damping=opt.eulerdamp) @ qacc
