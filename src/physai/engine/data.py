"""The engine's per-state workspace (MuJoCo's mjData): everything that depends on q, qd, qdd for n states.

The state index comes LAST in every array (structure of arrays: xmat[l, i, j, k] is link l's rotation entry
(i, j) in state k), so that each arithmetic step is one numpy operation over contiguous runs of states.
Per-link arrays have one extra row at the end, index -1, for the world (velocity 0, acceleration -gravity),
so that a root's parent needs no special case. Spatial vectors are (angular, linear), world-aligned and
taken about the centre of the link's tree (the world position of the link that carries the tree's root body,
Model.link_centerid), as MuJoCo takes them about a subtree's centre of mass; this keeps their numbers
small wherever the robot stands. Velocities are (omega, v) with v the velocity of the body point at the centre.
"""

from dataclasses import dataclass

import numpy as np

from physai.exceptions import ShapeError


class Data:
    """Workspace of n states of a Model; each algorithm fills the fields it needs (None until then).

    Pass one to a public function to keep what it computed: d = Data(model, N); engine.rnea(model, Q, QD, QDD, data=d);
    then d.cvel[l, :, k] is link l's velocity in state k (Data(model) for a single state, read column 0).

    position (kinematics):
    xmat      (nlink, 3, 3, n)   link orientation in the world
    xpos      (nlink, 3, n)      link origin in the world [m]
    center    (nlink, 3, n)      the centre of the link's tree [m]
    cpos      (nlink, 3, n)      link origin relative to the centre [m]
    inertia (com_pos):
    cipos     (nlink, 3, n)      link centre of mass relative to the centre [m]
    cinert    (nlink, 6, 6, n)   spatial inertia about the centre [kg m^2, kg m, kg]
    cdof      (nv, 6, n)         motion subspace S of each dof: spatial velocity per unit joint speed
    velocity (com_vel):
    cvel      (nlink + 1, 6, n)  link spatial velocity [rad/s, m/s]; row -1 is the world (0)
    cdof_dot  (nv, 6, n)         cvel_parent x cdof: the rate of cdof as its link's parent moves (MuJoCo's cdof_dot)
    RNE (rne):
    cacc      (nlink + 1, 6, n)  link spatial acceleration, gravity included as a base acceleration -g; row -1 the world
    cfrc      (nlink, 6, n)      net spatial force on the link and its subtree after the backward pass [N m, N]
    qfrc      (nv, n)            joint forces of the last RNE [N m | N]
    CRBA (crb):
    crb       (nlink, 6, 6, n)   composite inertia of the link and its subtree about the centre
    qM        (nv, nv, n)        joint-space inertia M(q), armature included
    crb_dot   (nlink, 6, 6, n)   the rate of crb (centroidal.momentum_matrix_dot)
    subtree_moment (nlink, 3, n) the subtree's mass moment about the centre, sum m (cpos + R ipos) [kg m]
                                 (smooth.subtree_moments: centroidal.com_jacobian)
    """

    __slots__ = ("model", "n", "xmat", "xpos", "center", "cpos", "cipos", "cinert", "cdof", "cvel", "cdof_dot",
                 "cacc", "cfrc", "qfrc", "crb", "qM", "crb_dot",
                 "subtree_moment")

    def __init__(self, model, n: int = 1):
        self.model = model                                # the Model this workspace belongs to
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ShapeError(f"a Data holds a whole number >= 1 of states, got n = {n!r}")
        self.n = n
        for name in self.__slots__[2:]:
            setattr(self, name, None)

    @property
    def ncol(self) -> int:
        """Number of state columns (= n)."""
        return self.n

    def __repr__(self) -> str:
        filled = [name for name in self.__slots__[2:] if getattr(self, name) is not None]
        return f"<physai.engine.Data: n={self.n}, filled: {', '.join(filled) or 'nothing'}>"


@dataclass(frozen=True)
class StepOptions:
    """How a step advances (cpp/data.h's StepOptions, whose fields the compiled rollout reads by name: h,
    integrator, implicit_damping; physai.engine.native.rollout_fields):

    integrator:     "euler", "rk4", "implicit", "implicitfast" or "discrete" (physai.engine.forward.STEPPERS)
    h:              the timestep [s], finite and > 0
    euler_damping:  euler treats joint damping implicitly ((M + h B) a = f; False: MuJoCo's mjDSBL_EULERDAMP)
    constraints:    the model's constraints act (False: MuJoCo's mjDSBL_CONSTRAINT)
    """

    integrator: str
    h: float
    euler_damping: bool = True
    constraints: bool = False

    def implicit_damping(self, model) -> bool:
        """Whether euler solves (M + h B) a = f: euler, euler_damping, and a dof of the model has damping."""
        return bool(self.integrator == "euler" and self.euler_damping and (model.dof_damping > 0).any())


@dataclass
class StepInputs:
    """What drives the model during a step besides its own state (cpp/data.h's StepInputs): actuators with their ctrl
    (nu,), applied forces qfrc_applied (nv,) [N m | N] and xfrc_applied (nbody, 6) [N, N m]; None where there are none
    (checked by physai.integrators.step_inputs)."""

    actuators: object
    ctrl: np.ndarray | None
    qfrc_applied: np.ndarray | None
    xfrc_applied: np.ndarray | None


@dataclass(frozen=True)
class RolloutInputs:
    """What drives N runs besides their states: actuators (physai.engine.actuators.Actuators or None) and, per run and
    step, ctrl (N, steps, nu), qfrc_applied (N, steps, nv), xfrc_applied (N, steps, nbody, 6), or None each; warm
    (N, nv): each run's first constraint warm start (None: zero, as a new MjData's); act (N, na): each run's first
    activations (None: zero, as a new MjData's)."""

    actuators: object = None
    ctrl: np.ndarray | None = None
    qfrc_applied: np.ndarray | None = None
    xfrc_applied: np.ndarray | None = None
    warm: np.ndarray | None = None
    act: np.ndarray | None = None

    def rows(self, index) -> "RolloutInputs":
        """The inputs of the runs `index` (an index or slice along the runs' axis; an integer drops the axis)."""
        pick = lambda x: None if x is None else x[index]                   # noqa: E731
        return RolloutInputs(self.actuators, pick(self.ctrl), pick(self.qfrc_applied), pick(self.xfrc_applied),
                             pick(self.warm), pick(self.act))

    def prefix(self, steps: int) -> "RolloutInputs":
        """The inputs of the first `steps` steps."""
        cut = lambda x: None if x is None else x[:, :steps]                 # noqa: E731
        return RolloutInputs(self.actuators, cut(self.ctrl), cut(self.qfrc_applied), cut(self.xfrc_applied), self.warm,
                             self.act)
