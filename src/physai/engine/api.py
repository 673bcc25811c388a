"""The engine's public functions: rigid-body dynamics on a Model for one state or a batch of N states, every joint type.

Every function takes q of shape (nq,) for one state or (N, nq) for N states, and qd, qdd, tau of shape (nv,) or
(N, nv) (a single state is shared by a batch), and returns results with the batch dimension of its input:

    rnea(model, q, qd, qdd)              tau = M(q) qdd + C(q, qd) qd + g(q)  (nv,) | (N, nv)  [N m | N]
    bias(model, q, qd)                   c = C(q, qd) qd + g(q) = rnea(q, qd, 0)   (MuJoCo's qfrc_bias)
    gravity(model, q)                    g(q) = rnea(q, 0, 0)
    mass_matrix(model, q)                M(q) by composite rigid bodies, armature on the diagonal
                                         (nv, nv) | (N, nv, nv)                    (mj_fullM)
    forward_dynamics(model, q, qd, tau)  qdd = M(q)^-1 (tau - c), M by Cholesky     (mj_forward's qacc)
    aba(model, q, qd, tau)               the same qdd by the articulated-body algorithm (pin.aba)
    kinetic_energy, potential_energy, energy    [J], () | (N,)              (MuJoCo's energy)
    body_kinetic_energy, body_potential_energy  each body's share [J], (nbody,) | (N, nbody); they sum to the totals
    tendon_kinematics(model, q)          the tendons' lengths (ntendon,) and Jacobians (ntendon, nv)  (mj_tendon)

Each runs the stages of physai.engine.smooth on a Data workspace (pass data=Data(model, N)
to keep the intermediate quantities). On the compiled backend (physai.engine.native) the same stages run in C++;
the NumPy text here is the reference, and runs where no compiler was found.
"""

import numpy as np

from physai.engine import batching, native, smooth
from physai.engine.data import Data
from physai.engine.loaders import as_model
from physai.engine.model import Model
from physai.engine.smooth import (body_energy_pos, body_energy_vel, crb, energy_pos, energy_vel, position_stages, rne,
                                  tree_cholesky_solve, velocity_stages)
from physai.engine.tendon import tendons
from physai.validation import states

__all__ = ["aba", "bias", "body_kinetic_energy", "body_potential_energy", "energy", "forward_dynamics", "gravity",
           "kinetic_energy", "mass_matrix", "potential_energy", "rnea", "tendon_kinematics"]


@native.dispatch("rnea", "rnea", batching.result)
def rnea(model: Model, q, qd, qdd, *, data: Data | None = None) -> np.ndarray:
    """Inverse dynamics by recursive Newton-Euler: the joint forces that give accelerations qdd at (q, qd).

    tau = M(q) qdd + C(q, qd) qd + g(q), armature included; equals physai.dynamics.rnea, pin.rnea (in MuJoCo's
    velocity coordinates) and, on a model without constraints, MuJoCo's qfrc_inverse + qfrc_passive.

    Args:
        model: the Model.
        q: joint positions (nq,) or (N, nq) [rad | m | unit quaternion].
        qd: joint velocities (nv,) or (N, nv) [rad/s | m/s].
        qdd: joint accelerations, same shapes as qd [rad/s^2 | m/s^2].
        data: optional Data(model, N or 1) that keeps the intermediate quantities.

    Returns:
        tau (nv,) or (N, nv) [N m | N].
    """
    model = as_model(model)
    def compute(d, q, qd, qdd):
        velocity_stages(model, d, q, qd)
        return rne(model, d, qd, qdd)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv), qdd=(qdd, model.nv))
    return batching.result(*batching.run(model, data, arrays, compute), "rnea")


@native.dispatch("bias", "bias", batching.result)
def bias(model: Model, q, qd, *, data: Data | None = None) -> np.ndarray:
    """Bias force c(q, qd) = C(q, qd) qd + g(q) (nv,) or (N, nv) [N m | N].

    Equals rnea(model, q, qd, 0), physai.dynamics.bias, pin.nonLinearEffects and MuJoCo's qfrc_bias.
    """
    model = as_model(model)
    def compute(d, q, qd):
        velocity_stages(model, d, q, qd)
        return rne(model, d, qd, None)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv))
    return batching.result(*batching.run(model, data, arrays, compute), "bias")


@native.dispatch("gravity", "gravity", batching.result)
def gravity(model: Model, q, *, data: Data | None = None) -> np.ndarray:
    """Gravity torques g(q) (nv,) or (N, nv) [N m | N], the joint forces that hold the tree still.

    Equals rnea(model, q, 0, 0), physai.dynamics.gravity and pin.computeGeneralizedGravity.
    """
    model = as_model(model)
    def compute(d, q):
        position_stages(model, d, q)
        return rne(model, d, None, None)
    arrays = dict(q=(q, model.nq))
    return batching.result(*batching.run(model, data, arrays, compute), "gravity")


@native.dispatch("mass_matrix", "the mass matrix", batching.result)
def mass_matrix(model: Model, q, *, data: Data | None = None) -> np.ndarray:
    """Joint-space inertia M(q) by composite rigid bodies, armature on the diagonal, symmetric.

    (nv, nv) for q (nq,), (N, nv, nv) for q (N, nq) [kg m^2 | kg m | kg]. Equals physai.dynamics.mass_matrix,
    MuJoCo's mj_fullM and pin.crba (in MuJoCo's velocity coordinates).
    """
    model = as_model(model)
    def compute(d, q):
        position_stages(model, d, q)
        return crb(model, d)
    arrays = dict(q=(q, model.nq))
    return batching.result(*batching.run(model, data, arrays, compute), "the mass matrix")


@native.dispatch("forward_dynamics", "forward dynamics", batching.result)
def forward_dynamics(model: Model, q, qd, tau, *, data: Data | None = None) -> np.ndarray:
    """Joint accelerations qdd for total applied joint forces tau: M(q) qdd = tau - c(q, qd), M from CRBA.

    Equals physai.dynamics.forward_dynamics, aba, pin.aba, and MuJoCo's qacc when tau is qfrc_applied +
    qfrc_actuator + qfrc_passive on a model without constraints, but for MuJoCo 4's discrete integrator, whose qacc is
    its step map (physai.constraints.forward_dynamics gives that).

    Args:
        q: joint positions (nq,) or (N, nq); qd: joint velocities (nv,) or (N, nv) [rad, rad/s | m, m/s].
        tau: applied joint forces, shapes as qd [N m | N].

    Returns:
        qdd (nv,) or (N, nv) [rad/s^2 | m/s^2].
    Raises InvalidModelError when M is singular (a massless dof without armature).
    """
    model = as_model(model)
    def compute(d, q, qd, tau):
        velocity_stages(model, d, q, qd)
        c = rne(model, d, qd, None)
        return tree_cholesky_solve(model, crb(model, d), tau - c)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv), tau=(tau, model.nv))
    return batching.result(*batching.run(model, data, arrays, compute), "forward dynamics")


@native.dispatch("aba", "aba", batching.result)
def aba(model: Model, q, qd, tau, *, data: Data | None = None) -> np.ndarray:
    """Forward dynamics by the articulated-body algorithm (RBDA table 7.1): the qdd of forward_dynamics.

    Works about the centres in the world frame, so no coordinate changes between links are needed; a link's
    dofs form one block (1 x 1 for hinges and slides, 3 x 3 for balls). Shapes and units as forward_dynamics;
    equals pin.aba.
    """
    model = as_model(model)
    def compute(d, q, qd, tau):
        velocity_stages(model, d, q, qd)
        return smooth.aba(model, d, qd, tau)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv), tau=(tau, model.nv))
    return batching.result(*batching.run(model, data, arrays, compute), "aba")


@native.dispatch("kinetic_energy", "the energy", batching.result)
def kinetic_energy(model: Model, q, qd, *, data: Data | None = None):
    """Kinetic energy 1/2 qd^T M(q) qd [J], armature included: a float, or (N,) for a batch (MuJoCo's energy[1]).

    Computed link by link as 1/2 sum_l v_l . (cinert_l v_l) + 1/2 sum_i armature_i qd_i^2, without forming M.
    """
    return _energy_at_velocities(as_model(model), data, q, qd, energy_vel, batching.scalar_result)


@native.dispatch("potential_energy", "the energy", batching.result)
def potential_energy(model: Model, q, *, data: Data | None = None):
    """Potential energy [J] of gravity (zero at the world origin) plus joint springs; float or (N,) (MuJoCo's energy[0]).

    U = -sum_b m_b gravity . com_b + 1/2 sum_j k_j (q_j - springref_j)^2, bodies welded to the world included.
    """
    return _energy_at_positions(as_model(model), data, q, energy_pos, batching.scalar_result)


@native.dispatch("energy", "the energy", batching.result)
def energy(model: Model, q, qd, *, data: Data | None = None):
    """Kinetic plus potential energy [J]; float or (N,) (MuJoCo's energy[0] + energy[1], physai.dynamics.energy)."""
    model = as_model(model)
    def compute(d, q, qd):
        velocity_stages(model, d, q, qd)
        return energy_vel(model, d, qd) + energy_pos(model, d, q)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv))
    return batching.scalar_result(*batching.run(model, data, arrays, compute), "the energy")


def body_kinetic_energy(model: Model, q, qd, *, data: Data | None = None) -> np.ndarray:
    """Each body's kinetic energy [J]: (nbody,) for one state, (N, nbody) for N (physai's bodies: MuJoCo's without the world).

    T_b = 1/2 m_b |v_com|^2 + 1/2 w . I_b w from the body's own mass and inertia, plus 1/2 armature_i qd_i^2 of the dofs
    of the joints that move the body (MuJoCo's dof_bodyid); bodies welded to the world have 0. Summed over the bodies it
    is kinetic_energy (MuJoCo's energy[1]). Runs the NumPy stages on either backend (no compiled kernel yet).
    q (nq,) or (N, nq), qd (nv,) or (N, nv) [rad | m, rad/s | m/s].
    """
    return _energy_at_velocities(as_model(model), data, q, qd, body_energy_vel, batching.result)


def body_potential_energy(model: Model, q, *, data: Data | None = None) -> np.ndarray:
    """Each body's potential energy [J]: (nbody,) for one state, (N, nbody) for N.

    U_b = -m_b gravity . com_b (zero at the world origin; bodies welded to the world included) plus the springs of the
    body's joints 1/2 k (q - springref)^2. Summed over the bodies it is potential_energy (MuJoCo's energy[0]). Runs
    the NumPy stages on either backend (no compiled kernel yet). q (nq,) or (N, nq) [rad | m].
    """
    return _energy_at_positions(as_model(model), data, q, body_energy_pos, batching.result)


def _energy_at_velocities(model: Model, data, q, qd, energy_of, result):
    """result(energy_of(model, d, qd)) after the velocity stages: kinetic energies, in total or per body."""
    def compute(d, q, qd):
        velocity_stages(model, d, q, qd)
        return energy_of(model, d, qd)
    return result(*batching.run(model, data, dict(q=(q, model.nq), qd=(qd, model.nv)), compute), "the energy")


def _energy_at_positions(model: Model, data, q, energy_of, result):
    """result(energy_of(model, d, q)) after the position stages: potential energies, in total or per body."""
    def compute(d, q):
        position_stages(model, d, q)
        return energy_of(model, d, q)
    return result(*batching.run(model, data, dict(q=(q, model.nq)), compute), "the energy")


_TENDONS = native.kernel("tendons", "the tendons' lengths and Jacobians", batching.result)


def tendon_kinematics(model, q) -> tuple[np.ndarray, np.ndarray]:
    """(lengths (ntendon,) [m | rad], Jacobians (ntendon, nv)) at joint positions q (nq,), or with a leading N for q
    (N, nq). Equal MuJoCo's d.ten_length and d.ten_J (dense) after mj_kinematics, mj_comPos and mj_tendon."""
    model = model if type(model) is Model else as_model(model)
    if native.on:
        return _TENDONS(model, q)
    (Q,), batch = states(q=(q, model.nq))
    n = Q.shape[1]
    L, J = np.zeros((n, model.ntendon)), np.zeros((n, model.ntendon, model.nv))
    for k in range(n):                                  # the NumPy reference: one state at a time
        d = Data(model)
        position_stages(model, d, Q[:, k:k + 1])
        L[k], J[k] = tendons(model, d, Q[:, k])
    return (L[0], J[0]) if batch is None else (L, J)
