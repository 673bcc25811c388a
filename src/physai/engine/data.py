"""The engine's per-state workspace (MuJoCo's mjData): everything that depends on q, qd, qdd for n states.

The state index comes LAST in every array (structure of arrays: xmat[b, i, j, k] is body b's
rotation entry (i, j) in state k), so that each arithmetic step is one numpy operation over contiguous runs
of states. Spatial vectors are (angular, linear), world-aligned and taken
about the body's centre: the world position of the origin of its root body (the ancestor whose parent
is the world), as MuJoCo takes them about a subtree's centre of mass; this keeps their numbers small
wherever the robot stands. Velocities are (omega, v) with v the velocity of the body point at the centre.
"""

from physai.exceptions import ShapeError


class Data:
    """Workspace of n states of a Model; each algorithm fills the fields it needs (None until then).

    Pass one to a public function to keep what it computed: d = Data(model, N); engine.rnea(model, Q, QD, QDD, data=d);
    then d.cvel[b, :, k] is body b's velocity in state k (Data(model) for a single state, read column 0).
    Arrays have ncol = max(n, 2) columns (the last axis, written n below): one state runs as two identical
    columns (see engine._checks).

    position (kinematics):
    xmat      (nbody, 3, 3, n)   body orientation in the world
    cpos      (nbody, 3, n)      body origin relative to the body's centre [m]
    center    (nbody, 3, n)      the body's centre (world position of its root's origin) [m]
    inertia (com_pos):
    cipos     (nbody, 3, n)      centre of mass relative to the centre [m]
    cinert    (nbody, 6, 6, n)   spatial inertia about the centre [kg m^2, kg m, kg]
    cdof      (nv, 6, n)         motion subspace S of each dof: spatial velocity per unit joint speed
    velocity (com_vel):
    cvel      (nbody, 6, n)      body spatial velocity [rad/s, m/s]
    cdof_dot  (nv, 6, n)         cvel x cdof, the time derivative of cdof per unit joint speed
    RNE (rne):
    cacc      (nbody, 6, n)      body spatial acceleration, gravity included as a base acceleration -g [rad/s^2, m/s^2]
    cfrc      (nbody, 6, n)      net spatial force on the body and its subtree after the backward pass [N m, N]
    qfrc      (nv, n)            joint forces of the last RNE [N m | N]
    CRBA (crb):
    crb       (nbody, 6, 6, n)   composite inertia of the body and its subtree about the centre
    qM        (nv, nv, n)        joint-space inertia M(q), armature included
    """

    __slots__ = ("model", "n", "ncol", "xmat", "cpos", "center", "cipos", "cinert", "cdof", "cvel", "cdof_dot",
                 "cacc", "cfrc", "qfrc", "crb", "qM")

    def __init__(self, model, n: int = 1):
        self.model = model                                # the Model this workspace belongs to
        self.n = int(n)
        if self.n < 1:
            raise ShapeError(f"a Data holds at least one state, got n = {n}")
        self.ncol = max(self.n, 2)
        for name in self.__slots__[3:]:
            setattr(self, name, None)

    def __repr__(self) -> str:
        filled = [name for name in self.__slots__[3:] if getattr(self, name) is not None]
        return f"<physai.engine.Data: n={self.n}, filled: {', '.join(filled) or 'nothing'}>"
