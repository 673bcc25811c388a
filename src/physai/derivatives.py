"""Analytical derivatives of inverse dynamics, forward dynamics and one integrator step, for every joint type.

    rnea_derivatives(model, q, qd, qdd)                     -> (dtau/dq, dtau/dqd, M)          each (nv, nv)
    forward_dynamics_derivatives(model, q, qd, tau)         -> (dqdd/dq, dqdd/dqd, M^-1)       each (nv, nv)
    step_derivatives(model, q, qd, dt, integrator, ctrl)    -> (A (2nv+na, 2nv+na), B (2nv+na, nu)), the discrete too
    step_derivatives(..., constraints=True)                 the constrained step, through the solver's optimum

q is (nq,) or (N, nq); qd, qdd, tau (nv,) or (N, nv); a batch returns (N, nv, nv) (step_derivatives: (N, 2nv, 2nv),
(N, 2nv, nu)).

The q chart. Derivatives with respect to q are taken in the tangent space of physai.joints.integrate (MuJoCo's
mj_integratePos): column k is d/dt at t = 0 of the function at integrate(q, e_k, t), where e_k is the k-th unit
velocity. For hinges and slides that is the partial derivative d/dq_k; for a ball it is a rotation about the
k-th axis of the CHILD frame (q * exp(t e_k)); for a free joint the first three are world translations of the
body origin and the last three rotations about the body axes. This is MuJoCo's chart (mjd_inverseFD,
mjd_transitionFD, mj_differentiatePos), not Pinocchio's (pin.integrate moves a free joint on SE(3)).

The recursions. Everything is taken in world axes about a point held fixed while differentiating (the engine's
centre of each tree at the given q, so that a robot far from the origin keeps its digits; any fixed point gives
the same derivatives), where a perturbation of q_j moves every quantity fixed in the links of j's subtree by
the twist S_j (Carpentier and Mansard, RSS 2018:
dS_k/dq_j = S_j x S_k, dI/dq_j = S_j x* I - I S_j x). With lambda(j) the parent link of dof j's link, v, a the
links' spatial velocities and accelerations (gravity as the base acceleration -g), F_l the net force on the
subtree of link l, Ic_l, Bc_l the subtree sums of the spatial inertias I_i and of the Coriolis matrices
B_i = 1/2 (v_i x* I_i - I_i v_i x + (I_i v_i) xbar*) (Echeandia and Wensing 2021; (f xbar*) u = u x* f), and

    u_j = S_j x v_lambda(j),   w_j = S_j x a_lambda(j) - u_j x v_lambda(j),   psi_j = (v_link(j) + v_lambda(j)) x S_j,

the derivatives come in composite form (as in Singh, Russell and Wensing's IDSVA, RA-L 2022), one forward and
one backward pass over links, then one product per pair of related dofs (k, j):

    link(k) in the subtree of link(j) (k = j, k below j, or both in one ball link):
        dtau_k/dq_j  = -S_k . (Ic_k w_j + 2 Bc_k u_j)
        dtau_k/dqd_j =  S_k . (Ic_k psi_j + 2 Bc_k S_j)
    link(k) a strict ancestor of link(j):
        dtau_k/dq_j  =  S_k . (S_j x* F_j - Ic_j w_j - 2 Bc_j u_j)
        dtau_k/dqd_j =  S_k . (Ic_j psi_j + 2 Bc_j S_j)
    otherwise 0;  dtau/dqdd = M (CRBA, armature on the diagonal).

(Derivation: the subtree of link(j) turns rigidly with S_j while v_lambda(j) and a_lambda(j) stay, so
dv_i = S_j x (v_i - v_lambda(j)) and da_i = S_j x (a_i - a_lambda(j)) - u_j x (v_i - v_lambda(j)); the pairing
S_k . F is invariant under a common rotation, which removes the rotation of S_k and F_k in the first case.)

Forces. rnea excludes passive forces (joint damping and springs), as physai.engine.rnea does: dtau/dqd holds no
damping; MuJoCo's mjd_inverseFD differentiates qfrc_inverse, which includes damping (DfDv = dtau/dqd^T + diag(b)).
step_derivatives differentiates the whole step: passive forces (damping, springs, fixed tendons' springs and dampers,
gravity compensation), actuators (gains, biases, clamping, activation dynamics with the activations in the state),
applied joint forces (constant), the bias and the mass matrix; fluid forces, spatial tendons' forces, muscle curves
and configuration-dependent moment arms by 4th-order centred differences of those forces alone (_HardForces).

Backends. rnea_derivatives and forward_dynamics_derivatives run on the engine's compiled backend (cpp/derivative.h,
the same recursion for one state in C++, batches on threads) when it is active (physai.engine.native.on) and no data=
is given, with the same named errors; otherwise on the NumPy text below, which stays the reference
(tests/test_derivatives.py compares the two within 1e-12 of each matrix's largest entry). So does step_derivatives
(cpp/step_derivative.h mirrors _Stepper and step_derivatives function by function: one state in C++, batches on threads).
"""

import functools
import warnings
from typing import NamedTuple

import numpy as np

from physai import collision, engine, forces, joints, validation
from physai import integrators as integ
from physai.jacobians import body_jacobian
from physai.kinematics import body_poses
from physai.linalg import inverse, solve
from physai.spatial import mat_to_quat, quat_mul, quat_to_mat, skew, so3_exp, so3_right_jacobian, tangent_axis, tangent_from_y
from physai.engine import actuation, api, batching, constraint, convex, forward, geoms, gjk, native, passive, primitives, solver, tendon
from physai.engine.actuators import AFFINE, DYN_FILTEREXACT, DYN_INTEGRATOR, DYN_MUSCLE, MUSCLE, TRN_BODY
from physai.engine.smooth import cholesky_solve
from physai.engine.support import dof_chain, standalone_free_dofs
from physai.engine.smooth import crb, cross_force, cross_motion, rne, velocity_stages
from physai.engine.contact import ContactSet
from physai.engine.data import StepOptions
from physai.engine.model import CONNECT, JOINT, WELD, WRAP_JOINT, Model, per_model
from physai.exceptions import (ConvergenceWarning, InvalidArgumentError, InvalidModelError, InvalidStateError,
                               UnsupportedModelError)

__all__ = ["rnea_derivatives", "forward_dynamics_derivatives", "step_derivatives"]


# ---------------------------------------------------------------- spatial matrices, state last

def _skew(x: np.ndarray) -> np.ndarray:
    """skew(x) (k, 3, 3, n) of vectors (k, 3, n), state last: skew(x) y = x cross y."""
    return np.moveaxis(skew(np.moveaxis(x, 1, -1)), 1, -1)


def _crm(v: np.ndarray) -> np.ndarray:
    """Featherstone's crm(v) (k, 6, 6, n) of motion vectors (k, 6, n): crm(v) m = v x m."""
    W, U = _skew(v[:, :3]), _skew(v[:, 3:])
    X = np.zeros(v.shape[:1] + (6, 6) + v.shape[2:])
    X[:, :3, :3] = X[:, 3:, 3:] = W
    X[:, 3:, :3] = U
    return X


def _bar(f: np.ndarray) -> np.ndarray:
    """(f xbar*) (k, 6, 6, n) of forces (k, 6, n): (f xbar*) u = u x* f."""
    N, F = _skew(f[:, :3]), _skew(f[:, 3:])
    X = np.zeros(f.shape[:1] + (6, 6) + f.shape[2:])
    X[:, :3, :3] = -N
    X[:, :3, 3:] = X[:, 3:, :3] = -F
    return X


def _mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.einsum("kijn,kjln->kiln", A, B)


def _mv(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.einsum("kijn,kjn->kin", A, x)


# ---------------------------------------------------------------- inverse dynamics

def _rnea_derivatives(model: Model, d: engine.Data, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray):
    """(dtau/dq, dtau/dqd, M), each (nv, nv, n), for states (nq, n), (nv, n), (nv, n) in the engine's layout."""
    velocity_stages(model, d, q, qd)                   # about each tree's centre: a fixed point while differentiating
    rne(model, d, qd, qdd)                             # cacc, cfrc = F (subtree sums)
    M = crb(model, d)                                  # d.crb = Ic
    I, v, F, Ic = d.cinert, d.cvel[:-1], d.cfrc, d.crb
    # 2 B_i = v x* I - I v x + (I v) xbar*, summed over subtrees
    X = _mm(I, _crm(v))                                # v x* I - I v x = -(X + X^T) for I symmetric
    B2 = _bar(_mv(I, v)) - X - np.swapaxes(X, 1, 2)
    Bs, parents = list(B2), model.link_parents
    for i in model.backward_links:
        np.add(Bs[parents[i]], Bs[i], out=Bs[parents[i]])
    # per dof j: its link l, parent link p
    S, link = d.cdof, model.dof_linkid
    par = model.link_parentid[link]
    vp, ap, vl = d.cvel[par], d.cacc[par], d.cvel[link]
    u = cross_motion(S, vp)
    w = cross_motion(S, ap) - cross_motion(u, vp)
    psi = cross_motion(vl + vp, S)
    Icl, Bcl = Ic[link], B2[link]
    P = _mv(np.swapaxes(Icl, 1, 2), S)                  # Ic_k S_k (Ic symmetric; transpose keeps it general)
    Q = _mv(np.swapaxes(Bcl, 1, 2), S)                  # (2 Bc_k)^T S_k
    G = cross_force(S, F[link]) - _mv(Icl, w) - _mv(Bcl, u)
    H = _mv(Icl, psi) + _mv(Bcl, S)
    same = link[:, None] == link[None, :]
    below = model.dof_ancestor.T | same                # [k, j]: link(k) in the subtree of link(j)
    above = model.dof_ancestor & ~same                  # [k, j]: link(k) a strict ancestor of link(j)
    pair = lambda X, Y: np.einsum("kin,jin->kjn", X, Y)  # noqa: E731   [k, j] = X_k . Y_j
    PQ = np.concatenate([P, Q], axis=1)
    below, above = below[..., None], above[..., None]
    dq = np.where(below, -pair(PQ, np.concatenate([w, u], axis=1)), np.where(above, pair(S, G), 0.0))
    dv = np.where(below, pair(PQ, np.concatenate([psi, S], axis=1)), np.where(above, pair(S, H), 0.0))
    return dq, dv, M


#: the compiled kernels (physai.engine.native), named as the NumPy text names a result that is not finite
_RNEA_DERIVATIVES = native.kernel("rnea_derivatives", "rnea derivatives", batching.result)
_FORWARD_DYNAMICS_DERIVATIVES = native.kernel("forward_dynamics_derivatives", "forward dynamics derivatives", batching.result)


def rnea_derivatives(model, q, qd, qdd, *, data: engine.Data | None = None):
    """Partial derivatives of inverse dynamics tau = rnea(q, qd, qdd) = M(q) qdd + C(q, qd) qd + g(q).

    Args:
        model: a physai.engine.Model (or what physai.engine.as_model takes: an MjModel, a name, a path).
        q: (nq,) or (N, nq) joint positions [rad | m | unit quaternion (w, x, y, z)].
        qd, qdd: (nv,) or (N, nv) velocities [rad/s | m/s] and accelerations [rad/s^2 | m/s^2].
        data: optional Data(model, N or 1) keeping the engine's intermediate quantities.

    Returns:
        (dtau_dq, dtau_dqd, M), each (nv, nv), or (N, nv, nv) for a batch: [i, k] = d tau_i / d x_k.
        dtau_dq [N m/rad | N/m | ...] is taken in the tangent space of physai.joints.integrate (MuJoCo's chart:
        column k is the derivative along integrate(q, e_k, t)); dtau_dqd [N m s/rad | ...] excludes passive damping
        (rnea excludes passive forces); M = dtau/dqdd, the mass matrix with armature (physai.engine.mass_matrix).
    Analytical: one forward and one backward pass over links (see the module docstring for the formulas).
    Equals pin.computeRNEADerivatives where the charts agree (fixed bases; for free joints in velocity
    coordinates only, see physai.conventions), and MuJoCo's mjd_inverseFD transposed, damping removed.
    """
    if data is None and native.on:
        return _RNEA_DERIVATIVES(model, q, qd, qdd)
    model = engine.as_model(model)
    nv = model.nv

    def compute(d, q, qd, qdd):
        return np.concatenate(_rnea_derivatives(model, d, q, qd, qdd), axis=0)

    arrays = dict(q=(q, model.nq), qd=(qd, nv), qdd=(qdd, nv))
    out, batch = batching.run(model, data, arrays, compute)
    return tuple(batching.result(out[k * nv:(k + 1) * nv], batch, "rnea derivatives") for k in range(3))


def forward_dynamics_derivatives(model, q, qd, tau, *, data: engine.Data | None = None):
    """Partial derivatives of forward dynamics qdd = M(q)^-1 (tau - c(q, qd)) (physai.engine.forward_dynamics).

    Args: model; q (nq,) or (N, nq); qd, tau (nv,) or (N, nv) [N m | N] (the total applied joint force, passive
    forces included if any: forward dynamics here, like the engine's, adds none itself).

    Returns:
        (dqdd_dq, dqdd_dqd, Minv), each (nv, nv) or (N, nv, nv), from dqdd/dx = -M^-1 dtau/dx at qdd = FD(q, qd, tau)
        and dqdd/dtau = M^-1. The q-derivative is in the tangent space of physai.joints.integrate (see
        rnea_derivatives). Equals pin.computeABADerivatives where the charts agree.
    Compiled (cpp/derivative.h: qdd by Cholesky, the derivatives at qdd, one Cholesky solve) when rnea_derivatives is.
    """
    if data is None and native.on:
        return _FORWARD_DYNAMICS_DERIVATIVES(model, q, qd, tau)
    model = engine.as_model(model)
    nv = model.nv

    def compute(d, q, qd, tau):
        velocity_stages(model, d, q, qd)
        c = rne(model, d, qd, None)
        qdd = cholesky_solve(crb(model, d), tau - c)
        dq, dv, M = _rnea_derivatives(model, d, q, qd, qdd)
        Minv = inverse(np.moveaxis(M, -1, 0))
        Minv = 0.5 * (Minv + np.swapaxes(Minv, 1, 2))
        ddq = -Minv @ np.moveaxis(dq, -1, 0)
        ddv = -Minv @ np.moveaxis(dv, -1, 0)
        return np.concatenate([np.moveaxis(x, 0, -1) for x in (ddq, ddv, Minv)], axis=0)

    arrays = dict(q=(q, model.nq), qd=(qd, nv), tau=(tau, nv))
    out, batch = batching.run(model, data, arrays, compute)
    return tuple(batching.result(out[k * nv:(k + 1) * nv], batch, "forward dynamics derivatives") for k in range(3))


# ---------------------------------------------------------------- forces

@per_model
def _passive_derivatives(model: Model):
    """(dP/dq, dP/dqd) (nv, nv) of physai.forces.passive_force: springs -k on hinges and slides, damping -b (read-only,
    made once per model)."""
    dq = np.zeros((model.nv, model.nv))
    dq[model.spring_dofadr, model.spring_dofadr] = -model.spring_stiffness
    dv = -np.diag(model.dof_damping)
    for a in (dq, dv):
        a.setflags(write=False)
    return dq, dv


def _tendon_derivatives(model: Model, d: engine.Data, q: np.ndarray):
    """(dP/dq, dP/dqd) (nv, nv) of the fixed tendons' springs and dampers J^T (-k x(J q) - b J qd) (passive.
    tendon_passive_force; J constant, on hinges and slides): -J^T diag(k, where the length is beyond the dead band) J,
    -J^T diag(b) J (a spatial tendon's, whose J moves with q, are _HardForces')."""
    length, J = tendon.tendons(model, d, q)
    lower, upper = model.tendon_lengthspring.T
    fixed = ~_spatial_tendons(model)
    k = np.where(fixed & ((length > upper) | (length < lower)), model.tendon_stiffness, 0.0)
    return -(J.T * k) @ J, -(J.T * np.where(fixed, model.tendon_damping, 0.0)) @ J


def _spatial_tendons(model: Model) -> np.ndarray:
    """(ntendon,) bool: the spatial tendons (their Jacobian moves with q)."""
    return model.wrap_type[model.tendon_adr] != WRAP_JOINT


def _hard_actuators(acts) -> np.ndarray:
    """(nu,) bool: the actuators whose force is differenced (_HardForces): a muscle's gain or bias (its force-length and
    force-velocity curves), or moment arms that depend on the configuration."""
    return (acts.gaintype == MUSCLE) | (acts.biastype == MUSCLE) | acts.posed_each


@per_model
def _pair_motions(model: Model) -> tuple:
    """(apart (nv, P), either (nv, P) bool, index {(g1, g2): [pair, ...]}) of the pairs detect's subset flags
    (engine.collision.pair_geoms, P = ncand + nmissing): [k, p] true where moving along dof k moves one of pair p's geoms
    and not the other (apart: the pair may start or stop touching) or at least one (either: a contact of p moves), and
    each geom pair's places among them (_Constraints._detect_subset's tables, made once per model)."""
    geom = engine.collision.pair_geoms(model)
    g1, g2 = model.geom_dofs[geom[:, 0]].T, model.geom_dofs[geom[:, 1]].T
    index = {}
    for p, pair in enumerate(geom.tolist()):
        index.setdefault(tuple(pair), []).append(p)
    return np.ascontiguousarray(g1 ^ g2), np.ascontiguousarray(g1 | g2), index


class _StillTables(NamedTuple):
    """_still_tables' arrays (their meanings there)."""
    pair: np.ndarray
    bound: np.ndarray
    margin: np.ndarray
    reach: np.ndarray
    local: np.ndarray
    frame: np.ndarray
    box: np.ndarray
    body: np.ndarray
    anchor: np.ndarray
    turn: np.ndarray
    slide: np.ndarray
    gbody: np.ndarray
    sphere: np.ndarray
    flat: np.ndarray
    plane: np.ndarray
    other: np.ndarray
    lift: np.ndarray


@per_model
def _still_tables(model: Model) -> _StillTables:
    """The fixed parts of _Constraints._proven_still's bounds (made once per model): (pair (P, 2) the pairs' geoms,
    bound (P,) margin + gap and margin (P,) min(margin, margin + gap) of each candidate (the narrow phase runs at
    margin + gap, detect keeps its contacts below margin) (inf: a pair without a narrow phase here, never
    decided), reach (ngeom,) a geom's box's (geom_aabb) centre's distance from the geom's plus its half sides' sum (a
    turn by a moves the box's centre and its extent along a fixed axis by at most reach a; it holds a capsule's ends;
    1e300 for a plane: its normal turns; 0 on a slide), local (ngeom, 3), frame (ngeom, 3, 3) a geom's position and axes in its body
    (the world's for a geom on it), box (ngeom, 6) its geom_aabb (zero for a plane), body (nv,) each dof's joint's
    body, anchor (nv,) a bound on the distance of a turning dof's axis from that body's origin (|jnt_pos| plus twice
    each later turning joint's on the body, 1e300 after a slide: MuJoCo composes a body's joints in order), turn and
    slide (nv,) each dof's angular and linear rate per unit of it (|axis| of a hinge or slide, 1 on a ball's or free
    joint's axes), gbody (ngeom,) a geom's body (nbody: the world), and detect's bounding-sphere filter's parts:
    sphere (P,) r1 + r2 + margin + gap where both geoms' rbound > 0 (nan elsewhere), and the pairs it tests as a plane
    below the other's sphere, (flat, plane, other, lift) (k,): the pair, its plane, its other geom, r + margin + gap."""
    G, pair = model.geoms, engine.collision.pair_geoms(model)
    cands = engine.collision.candidates(model)[0]
    _, _, _, _, _, margin, gap = engine.collision.contact_parameter_arrays(model, cands.geom[:, 0], cands.geom[:, 1],
                                                                          cands.ipair)
    extra = len(pair) - len(cands)
    kept = np.minimum(margin, margin + gap)                             # detect keeps a contact while dist < kept
    margin, bound = np.r_[kept, np.full(extra, np.inf)], np.r_[margin + gap, np.full(extra, np.inf)]
    plane = G.geom_type == geoms.PLANE
    box = np.where(plane[:, None], 0.0, G.geom_aabb)                    # a plane's box: unbounded, not read
    reach = np.where(plane, 1e300, np.linalg.norm(box[:, :3], axis=1) + box[:, 3:].sum(axis=1))
    body, anchor, turn, slide = (np.zeros(model.nv, np.intp), np.zeros(model.nv), np.zeros(model.nv),
                                 np.zeros(model.nv))
    for j in range(model.njnt):
        kind, adr, b = int(model.jnt_type[j]), int(model.jnt_dofadr[j]), int(model.jnt_bodyid[j])
        later = [i for i in range(j + 1, model.njnt) if int(model.jnt_bodyid[i]) == b]
        far = 1e300 if any(int(model.jnt_type[i]) == joints.SLIDE for i in later) else \
            np.linalg.norm(model.jnt_pos[j]) + 2 * sum(np.linalg.norm(model.jnt_pos[i]) for i in later)
        size = np.linalg.norm(model.jnt_axis[j])
        dofs = slice(adr, adr + joints.NV[kind])
        body[dofs], anchor[dofs] = b, far
        if kind == joints.FREE:
            slide[adr:adr + 3], turn[adr + 3:adr + 6] = 1.0, 1.0
        elif kind == joints.BALL:
            turn[dofs] = 1.0
        elif kind == joints.HINGE:
            turn[dofs] = size
        else:
            slide[dofs] = size
    frame = np.ascontiguousarray(quat_to_mat(G.geom_quat / np.linalg.norm(G.geom_quat, axis=1)[:, None]))
    gbody = np.where(G.geom_bodyid >= 0, G.geom_bodyid, model.nbody)
    r1, r2 = G.geom_rbound[pair[:, 0]], G.geom_rbound[pair[:, 1]]
    spheres = (r1 > 0) & (r2 > 0)
    reach_pair = np.where(spheres, r1 + r2 + bound, np.nan)             # nan: no sphere test
    flats = []                                                          # (pair, plane, other, r + bound)
    for p, (a, b) in enumerate(pair.tolist()):
        for g, o, r in ((a, b, r2[p]), (b, a, r1[p])):
            if not spheres[p] and G.geom_type[g] == geoms.PLANE and r > 0:
                flats.append((p, g, o, r + bound[p]))
    flats = np.array(flats, dtype=float).reshape(-1, 4)
    table = _StillTables(pair, bound, margin, reach, G.geom_pos.copy(), frame, box, body, anchor, turn, slide, gbody,
                         reach_pair, flats[:, 0].astype(np.intp), flats[:, 1].astype(np.intp), flats[:, 2].astype(np.intp),
                         flats[:, 3])
    for a in table:
        a.setflags(write=False)
    return table


@per_model
def _still_kernel_tables(model: Model) -> dict:
    """_still_tables' arrays by name as the compiled proof reads them (native.PROVEN_STILL,
    cpp/constraint_derivative.h's StillTables), with the geoms' dofs, types and sizes, ROW_STEP and ccd_tolerance (made
    once per model)."""
    table = _still_tables(model)._asdict()
    table.update(geom_dofs=model.geom_dofs, geom_type=model.geoms.geom_type, geom_size=model.geoms.geom_size)
    out = {k: np.ascontiguousarray(v, dtype=np.float64 if np.asarray(v).dtype.kind == "f" else np.int64)
           for k, v in table.items()}
    return {**out, "ngeom": int(model.geoms.ngeom), "npair": len(out["pair"]), "nflat": len(out["flat"]),
            "row_step": float(ROW_STEP), "ccd_tolerance": float(model.opt.ccd_tolerance)}


@per_model
def _one_call_tables(model: Model) -> dict | None:
    """The per-model tables of the constrained step in one compiled call (native.CONSTRAINED_STEP, cpp/bindings.cpp's
    constrained_step_call; cpp/constraint_derivative.h's OneCallTables): still, _still_kernel_tables'; static_body
    (nbody,) 1 where no dof moves the body (body_linkid < 0); the limited joints (_limited_joints, none without
    opt.limit) by their first q entry, ball flag, range and margin; contact_dofs (collision.contact_dofs' dofs, none
    without contacts); turns (Model.dof_turns); R_FLOOR, STIFF_ROWS, _FD_POINT_WEIGHTS and the solver's tolerance and
    iterations. None for a model whose solves it never takes: without dofs, one the compiled solver does not run (a
    left-out pair where it collides, noslip), a power-1 impedance (power_one: _refuse_impedance_kinks), limited tendons
    (_moving_dofs: every dof), a limited ball joint (its limit differenced), the elliptic cone, or a connect, weld or
    tendon equality active from the start (their rows differenced, or _anchor_rows'): each state would be declined
    after its solve."""
    opt = model.opt
    limited_ball = opt.limit and (model.jnt_limited & (model.jnt_type == joints.BALL)).any()
    if not model.nv or not (native.compiled_solver(model) and native.runs(model)) or opt.noslip_iterations > 0 or \
            (collision.has_contacts(model) and (model.unsupported or len(engine.collision.candidates(model)[1]))) or \
            constraint.power_one(model) or (opt.limit and model.tendon_limited.any()) or limited_ball or \
            opt.cone == "elliptic" or (opt.equality and (model.eq_active0 & (model.eq_type != JOINT)).any()):
        return None
    joints_limited, adr, low, high, margin, ball = _limited_joints(model) if opt.limit else (np.zeros(0, np.intp),) * 6
    dofs = np.flatnonzero(collision.contact_dofs(model)) if collision.has_contacts(model) else np.zeros(0, np.intp)
    ints = dict(static_body=model.body_linkid < 0, limited_adr=adr, limited_ball=ball, contact_dofs=dofs)
    floats = dict(limited_low=low, limited_high=high, limited_margin=margin, turns=model.dof_turns,
                  weights=_FD_POINT_WEIGHTS, geom_axes=_geom_axes(model), body_dofs=_body_dofs(model))
    return {"still": _still_kernel_tables(model), "nlimited": len(joints_limited), "ncontact_dofs": len(dofs),
            "r_floor": R_FLOOR, "stiff_rows": STIFF_ROWS, "tolerance": float(opt.tolerance),
            "iterations": int(opt.iterations),
            **{k: np.ascontiguousarray(v, dtype=np.int64) for k, v in ints.items()},
            **{k: np.ascontiguousarray(v, dtype=np.float64) for k, v in floats.items()}}


def _segment_distance(a0: np.ndarray, d1: np.ndarray, b0: np.ndarray, d2: np.ndarray) -> np.ndarray:
    """(m,) a lower bound on the distance of segments a0 + s d1 and b0 + t d2 (s, t in [0, 1]; (m, 3) each, a point
    where d = 0): at Ericson's clamped solution (s on the lines' (0 where they are parallel), t from it, s again where t
    is clamped), w = a0 + s d1 - b0 - t d2, the squared distance |w|^2 less the most its tangent plane falls over the
    square (|w|^2 is convex in (s, t): a bound at any (s, t), 0 from the optimum). Nearly parallel segments' s rounds
    off the optimum (den's cancellation) and |w| alone exceeds the distance by up to |d| sqrt(eps); this bound does
    not, but for its own rounding (a few eps of the points' coordinates: in _proven_still's slack)."""
    r = a0 - b0
    A, E, b, c, f = np.einsum("pmx,pmx->pm", np.stack([d1, d2, d1, d1, d2]), np.stack([d1, d2, d2, r, r]))
    den = A * E - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(den > 0, np.clip((b * f - c * E) / den, 0.0, 1.0), 0.0)
        t = np.where(E > 0, (b * s + f) / E, -1.0)                     # a point b0: its nearest on the first
        s = np.where(t < 0, np.where(A > 0, np.clip(-c / A, 0.0, 1.0), 0.0),
                     np.where(t > 1, np.where(A > 0, np.clip((b - c) / A, 0.0, 1.0), 0.0), s))
    t = np.clip(t, 0.0, 1.0)
    w = a0 + s[:, None] * d1 - b0 - t[:, None] * d2
    ds, dt = (w * d1).sum(axis=1), -(w * d2).sum(axis=1)                # half the gradient of |w|^2 in s, t
    fall = 2 * (np.maximum(ds * s, ds * (s - 1)) + np.maximum(dt * t, dt * (t - 1)))   # to the best corner of the square
    return np.sqrt(np.maximum((w * w).sum(axis=1) - fall, 0.0))


@per_model
def _geom_kinds(model: Model) -> frozenset:
    """The geom types the model has (the refusals' passes return at once where a pair's kind cannot occur), made once
    per model."""
    return frozenset(model.geoms.geom_type.tolist())


@per_model
def _geom_lists(model: Model) -> tuple:
    """(geom_type, geom_size's first column, body_linkid) as lists: the per-contact passes' lookups, made once per
    model."""
    return model.geoms.geom_type.tolist(), model.geoms.geom_size[:, 0].tolist(), model.body_linkid.tolist()


class _ContactList(NamedTuple):
    """The contacts at solve()'s q as lists, made once a solve (the per-contact passes read them): geom [(g1, g2)],
    row (each one's first row, -1: none), dim, body [(b1, b2)] (-1: the world), kinds [(type1, type2)] (-1: no geom)."""
    geom: list
    row: list
    dim: list
    body: list
    kinds: list


def _contact_list(model: Model, r, contacts) -> _ContactList:
    """_ContactList of the contacts (a ContactSet, or None) laid out in the rows r."""
    if contacts is None or contacts.geom is None:
        return _ContactList([], [], [], [], [])
    types = _geom_lists(model)[0]
    geom = contacts.geom.tolist()
    kinds = [(types[a] if a >= 0 else -1, types[b] if b >= 0 else -1) for a, b in geom]
    return _ContactList(geom, r.contact_row.tolist(), r.contact_dim.tolist(), r.contact_body.tolist(), kinds)


@per_model
def _joint_dofs(model: Model) -> np.ndarray:
    """(njnt, nv) bool: [j, k] true where dof k is one of joint j's (_Constraints._moving_dofs' table, made once per
    model)."""
    out = np.zeros((model.njnt, model.nv), bool)
    for j, (adr, kind) in enumerate(zip(model.jnt_dofadr.tolist(), model.jnt_type.tolist())):
        out[j, adr:adr + joints.NV[kind]] = True
    return out


@per_model
def _body_dofs(model: Model) -> np.ndarray:
    """(nbody + 1, nv) bool: row b the dofs that move body b (dof_chain), the last row (index -1: the world) none
    (_Constraints._moving_dofs' table, made once per model)."""
    out = np.vstack([dof_chain(model, b) for b in range(model.nbody)] + [np.zeros(model.nv, bool)])
    out.setflags(write=False)
    return out


@per_model
def _limited_joints(model: Model) -> tuple:
    """(joints, qposadr, low, high, margin, ball) (k,) of the model's limited joints (_Constraints._moving_dofs' table,
    made once per model): their indices, first coordinates, ranges, margins and whether each is a ball."""
    j = np.flatnonzero(model.jnt_limited)
    table = (j, model.jnt_qposadr[j], model.jnt_range[j, 0], model.jnt_range[j, 1], model.jnt_margin[j],
             model.jnt_type[j] == joints.BALL)
    for a in table:
        a.setflags(write=False)
    return table


#: 4th-order centred differences: the steps (multiples of FD_STEP) and their weights over 12 FD_STEP
FD_STEP = 1e-4
FD_WEIGHTS = ((-2.0, 1.0), (-1.0, -8.0), (1.0, 8.0), (2.0, -1.0))


class _HardForces:
    """The forces step_derivatives differences instead of differentiating them (each with many branches; the rest of
    the step stays analytic): the fluid forces (passive.fluid), the spatial tendons' springs and dampers, the whole
    actuator force when some actuator is _hard_actuators' (muscle curves, configuration-dependent moment arms), and for
    the implicit integrators h D a, D the non-bias part of d f / d qd, which moves with (q, qd) through these forces.
    Their derivatives in (q, qd) at a fixed acceleration a, ctrl and act are 4th-order centred differences (FD_STEP
    along each tangent direction of q, physai.joints.integrate, and each qd): truncation ~FD_STEP^4, rounding
    ~eps / FD_STEP of the forces' scale."""

    def __init__(self, model: Model, h: float, inputs, euler_damping: bool, act, name: str):
        acts = inputs.actuators
        self.model, self.h, self.x, self.act = model, h, inputs, act
        self.fluid = passive.has_fluid(model)
        spatial = _spatial_tendons(model) if model.ntendon else np.zeros(0, bool)
        self.tendon_forces = spatial & ((model.tendon_stiffness != 0) | (model.tendon_damping != 0))
        self.actuators = acts is not None and bool(_hard_actuators(acts).any())
        self.damping, self.name = name in ("implicit", "implicitfast"), name
        self.metric = name == "discrete"               # -h (B a + h K a + K qd): the discrete metric's motion
        self.free_rows = _free_rows(model) if self.metric else None
        self.any = self.fluid or self.tendon_forces.any() or self.actuators
        self.probe = engine.DynamicsEvaluator(model, h, inputs, euler_damping, act=act) if self.any else None

    def force(self, q: np.ndarray, qd: np.ndarray, a: np.ndarray) -> np.ndarray:
        """(nv,) the hard forces at (q, qd) and the acceleration a: fluid + spatial tendons' J^T f + actuators (when hard)
        + h D a (implicit, implicitfast)."""
        model, run = self.model, self.probe
        velocity_stages(model, run.d, q[:, None], qd[:, None])
        f = passive.fluid(model, run.d)[:, 0] if self.fluid else np.zeros(model.nv)
        if self.tendon_forces.any():
            length, J = tendon.tendons(model, run.d, q)
            f = f + J.T @ np.where(self.tendon_forces, passive.tendon_force(model, length, J @ qd), 0.0)
        if self.actuators:
            f = f + run.actuator_force(q, qd, self.act)
        if self.damping:
            acts = run.actuators if self.actuators else self.x.actuators
            f = f + self.h * forward.velocity_derivative(model, q, qd, "implicitfast", acts, self.x.ctrl, self.act,
                                                         self.h, pattern=self.name) @ a
        if self.metric:
            f = f + self.metric_force(q, qd, a)
        return f

    def metric_force(self, q: np.ndarray, qd: np.ndarray, a: np.ndarray) -> np.ndarray:
        """(nv,) the discrete step's metric moved to the right side at (q, qd) and a fixed a: -h (B a + h K a + K qd)
        (forward.discrete_metric_terms, M^ a = f - h K qd), on a standalone free body's rows h D a - h K qd (its implicitfast
        block without actuator damping, D = -B: forward.free_body_blocks; the bias's part is analytic)."""
        model, h, x = self.model, self.h, self.x
        acts = self.probe.actuators if self.actuators else x.actuators
        B, K = forward.discrete_metric_terms(model, q, qd, h, acts, x.ctrl, self.act)[:2]
        out = -h * ((B + h * K) @ a + K @ qd)
        if self.free_rows.any():                       # their blocks: no actuator damping (forward.discrete)
            D = forward.passive_velocity_derivative(model, q, qd, not forward.explicit_couplings(model))
            out[self.free_rows] = h * (D @ a - K @ qd)[self.free_rows]
        return out

    def derivatives(self, q: np.ndarray, qd: np.ndarray, a: np.ndarray):
        """(d force/dq, d force/dqd) (nv, nv) by 4th-order centred differences (zeros when there is nothing hard)."""
        nv = self.model.nv
        Fq, Fv = np.zeros((nv, nv)), np.zeros((nv, nv))
        if not self.any:
            return Fq, Fv
        E = np.eye(nv)
        for k in range(nv):
            for s, w in FD_WEIGHTS:
                t = s * FD_STEP
                qk = joints.integrate(self.model.coords, q[:, None], E[k][:, None], t)[:, 0]
                Fq[:, k] += w * self.force(qk, qd, a)
                Fv[:, k] += w * self.force(q, qd + t * E[k], a)
        return Fq / (12 * FD_STEP), Fv / (12 * FD_STEP)


#: a row's R above R_FLOOR is imp's (1 - imp) / imp |diagApprox|, far from MuJoCo's floor mjMINVAL = 1e-15: its forces'
#: derivative analytic through imp (_analytic_forces); at the floor D is not imp's, and the row is differenced
R_FLOOR = 1e-10
#: [rad | m] the differencing step of the constraint rows in q (_Constraints): truncation ~ROW_STEP^4, rounding ~eps /
#: ROW_STEP of the constraint forces' scale
ROW_STEP = 1e-6
#: a cylinder on a plane is refused within FLAT_REACH ROW_STEP (times its axis's rate) of lying flat
#: (_Constraints._refuse_flat_cylinders: just beyond it the differences' truncation is a few 1e-8 of A: 2.9e-8 at
#: 1.2e-4 rad, 2.2e-8 at 1e-4, 2.1e-9 at 2e-4 from MuJoCo's eps-1e-6 Richardson pair, a free cylinder 0.3 mm deep)
FLAT_REACH = 100

#: [m] a multi-contact pair's contact point jumps or kinks between the differences' points along a dof where its third
#: difference there, |p(2 h) - 2 p(h) + 2 p(-h) - p(-2 h)| (h = ROW_STEP), or its fourth through q's own point,
#: |p(-2 h) - 4 p(-h) + 6 p(0) - 4 p(h) + p(2 h)|, exceeds this times max(1, |p|) (_refuse_clipped_jumps). Placed
#: between the rounding and the smallest jump found: smooth points' differences measured up to 1.7e-14 m at |p| < 1,
#: ~4e-14 m 5 m from the origin, the strongest smooth curvature 5.5e-13 m (a cylinder 1e-4 rad from lying on its side
#: on a mesh); a jump J gives ~J, a kink turning p's rate by s ~s h: the smallest found 2.6e-12 m, the others 2.7e-11 to
#: 4.6e-1 m
CLIP_JUMP = 1e-12

#: the rows whose q-derivative _Constraints takes analytically (_analytic_rows) instead of differencing (False: every row
#: differenced, as before; the tests compare the two)
ANALYTIC_ROWS = True

#: the constrained step's pieces compiled in cpp/constraint_derivative.h (plane_contact_rows, segment_contact_rows) run
#: there when the backend is native (False: their NumPy text everywhere; the tests compare the two)
COMPILED_PIECES = True

#: step_derivatives(constraints=True) runs the step after the rows' derivatives in one compiled call when the backend is
#: native (_compiled_constrained: euler, implicit, implicitfast on what numpy_only passes; False: the NumPy text; the
#: tests compare the two)
COMPILED_STEP = True

#: step_derivatives(constraints=True) of a state whose rows are all analytic and move with no dof in one compiled call,
#: a batch's states on threads (_one_call: the contacts, the solve, the rows' terms, the still dofs' check and the step;
#: False: the calls of _compiled_constrained; the tests compare the two)
ONE_CALL = True

#: rows are stiff where a quadratic row's D exceeds this times M's largest diagonal entry (a pyramid at friction 1e-5:
#: D ~ 1e11): their forces are then corrected to the optimum's balance and H solved in their range space (_hessian_solve),
#: elsewhere H = M + J^T D J directly (its rounding eps D / M below 2e-10)
STIFF_ROWS = 1e6


class _Constraints:
    """qfrc_constraint of a step and its derivatives through the solver's optimum (issue U), for step_derivatives(...,
    constraints=True). The solver's qacc a_c minimises 1/2 |a - a0|_M^2 + s(J a - aref) (physai.engine.solver); at the
    optimum M a_c - f + G(q, qd; a_c) = 0 with G = -J^T force(J a - aref) (constraint.update: each row's force in its
    state, held: satisfied, quadratic, linear, on the cone). Differentiating with the states held, for an input x:

        H da_c/dx = r_x - dG/dx|a_c,     dqfrc_constraint/dx = M da_c/dx - r_x,     H = M + J^T S J

    with r_x = df/dx - d(M a)/dx|a_c (rnea_derivatives at a_c), S the force's derivative in jar (D on quadratic rows,
    each cone block's Hessian), dG/dqd = -J^T S daref/dqd (aref = -B J qd - K imp (pos - margin), less Jdot qd on
    connect and weld rows: _aref_velocity_derivative), and dG/dq analytic for the rows _analytic_rows knows (a plane
    against a sphere, capsule or box, two spheres or capsules, on the pyramidal cone; a hinge's or slide's limit; a
    joint equality: _analytic_forces; a connect and a weld: _anchor_rows), and for the others by 4th-order centred
    differences of G along q's tangent directions that move one of them (_moving_dofs; zero along the others)
    (ROW_STEP, small beside a resting contact's depth): the rows'
    Jacobians, contact frames, impedances and aref rebuilt at each point, collision included (a contact's, limit's or
    equality's impedance at its tangent at q: _tangent_impedance), each row's force in its held state (held_forces). A point
    where a row appears or disappears raises InvalidStateError: the step is not
    differentiable there (a contact or limit at its switch); so does a contact between spheres or capsules whose nearest
    points reach or leave a segment's end within 2 ROW_STEP (nearly parallel capsules: _segment_pairs), and a capsule on
    a plane within 2 ROW_STEP of standing on its end (its frame's tangent jumps: _refuse_upright_capsules), a cylinder
    within FLAT_REACH ROW_STEP of lying flat on one (its points jump round its rim: _refuse_flat_cylinders), a
    cylinder on a box or mesh whose clipped contacts jump (_refuse_cylinders_on_faces), any multi-contact whose
    clipped points jump or kink between the differenced points (_refuse_clipped_jumps), or a sphere
    or capsule pair's normal within 2 ROW_STEP of make_frame's switch (_refuse_frame_switches), as any differenced
    contact's whose normal crosses it at a differenced point (_refuse_frame_jumps), and a row whose impedance (solimp's
    power 1) reaches a kink within 2 ROW_STEP (|pos - margin| = width, an equality's pos = 0: _refuse_impedance_kinks);
    how close a row
    is to changing state, switch_margins says, and to a kink _break_margins (step_derivatives' margins=True). The
    discrete step (self.discrete set): M
    is its metric M + h B + h^2 K, f its right side f - h K qd, the rows those at the step's end
    (engine.constraint.rows' discrete_h: aref and R over s = 1 + h B + h^2 K imp, diagApprox in the metric's diagonal at
    each differenced q; daref/dqd = -(B + h K imp) J / s), solved by the NumPy solver as the engine's discrete step."""

    def __init__(self, model: Model):
        self.model = model
        self.margins = np.full(4, np.inf)              # the smallest margins over the solves (RK4: its stages)
        self.measure = False                           # whether solve() measures the margins (step_derivatives' margins)
        self.warmstart = None                          # the solves' warm start (nv,) (step_derivatives' qacc_warmstart)
        self.step_planes = False                       # whether the compiled step takes the plane contacts' rows (terms)
        self.contacts = None                           # [the contacts at the last solve's q], or None
        self.discrete = None                           # the discrete step's (h, diag(M^) at (q, qd)): its rows' own
        self.analytic = np.zeros(0, np.intp)           # the optimum's rows whose dG/dq is analytic (_analytic_rows)
        self.anchored = np.zeros(0, np.intp)           # the optimum's connect and weld rows, analytic (_anchor_rows)
        self.pairs = {}                                # {contact: _SegmentPair} at derivatives()' q (_segment_pairs)
        self.listed = _contact_list(model, None, None)  # the contacts at solve()'s q as lists (_ContactList)

    def rows(self, Q: np.ndarray, QD: np.ndarray, contacts=None) -> list:
        """The constraint rows at each state (Q (n, nq), QD (n, nv)), with the contacts given (a list of n) or those at
        Q (physai.collision.detect): compiled in one call when the backend is (engine.constraint.compiled_rows), else
        engine.constraint.rows (always for the discrete step's rows: discrete_h and the metric's diagonal at each state)."""
        model = self.model
        if contacts is None and collision.has_contacts(model):
            contacts = collision.detect(model, Q)
        if self.discrete is None and native.on and native.runs(model):
            return constraint.compiled_rows(model, Q, QD, constraint.contact_arrays(contacts), None)
        out, d = [], engine.Data(model)                # the NumPy rows' workspace, for this call's states
        for k, (q, qd) in enumerate(zip(Q, QD)):
            end = {} if self.discrete is None else dict(discrete_h=self.discrete[0], step_diagonal=self.discrete[1](q, qd))
            velocity_stages(model, d, q[:, None], qd[:, None])
            out.append(constraint.rows(model, d, q, qd, None if contacts is None else contacts[k], **end))
        return out

    def solve(self, q: np.ndarray, qd: np.ndarray, M: np.ndarray | None, f: np.ndarray | None,
              tau: np.ndarray | None = None, front=None):
        """(a_c, qfrc_constraint) at (q, qd) for M and qfrc_smooth f (the step's solver and options, from self.warmstart
        where given and its cost is lower); keeps the rows, their forces (engine.constraint.update at jar = J a_c -
        aref), states and S for derivatives(). On the compiled
        backend the rows, the solve and that update are one call (solver.compiled_forward's rows: the rows built once),
        which takes tau = f + c (the bias c): the caller's (the compiled evaluate's DynamicsEvaluator.tau) or, None,
        made here; or, front given (the step's StepInputs, M and f None), makes M, f and tau itself as that evaluate
        does (solver.compiled_forward's front: the compiled constrained step's models, numpy_only ""), None where f is
        not finite or the call fails (the NumPy text then names what is wrong)."""
        if self.model.opt.noslip_iterations > 0:
            raise UnsupportedModelError("step_derivatives(constraints=True) with noslip (opt.noslip_iterations > 0): "
                                        "noslip's post-pass is not differentiated; set noslip_iterations to 0")
        model, opt = self.model, self.model.opt
        contacts = [collision.detect(model, q)] if collision.has_contacts(model) else None
        self.contacts = contacts
        if self.discrete is None and native.on and native.compiled_solver(model):   # compiled: tau = f + c, one call
            arrays = constraint.contact_arrays(contacts)
            if front is not None:                      # evaluate in the call too: M and f come back
                try:
                    *out, f, M = solver.compiled_forward(model, q, qd, None, arrays, None, self.warmstart,
                                                         opt.tolerance, opt.iterations, rows=True,
                                                         front=_front(model, front))
                except (InvalidStateError, InvalidModelError):
                    return None
                if not np.isfinite(f).all():
                    return None
            else:
                tau = f + api.bias(model, q, qd) if tau is None else tau
                out = solver.compiled_forward(model, q, qd, tau, arrays, None, self.warmstart, opt.tolerance,
                                              opt.iterations, rows=True)   # its rows, update's forces, states, cones at a
            a, qfrc, (force,), its, _, converged, (r,), (state,), (cones,) = out
            converged, its = bool(converged[0]), int(its[0])
        else:
            r = self.rows(q[None], qd[None], contacts)[0]
            solution = solver.solve_with(model, r, M, f, self.warmstart)
            a, converged, its = solution.qacc, solution.converged, solution.iterations
            force, state, _, cones = constraint.update(r, r.J @ a - r.aref, cone_hessian=True)
            qfrc = constraint.rows_transpose_times(r, force)
        if not converged:
            warnings.warn(_unconverged(opt, its), ConvergenceWarning, stacklevel=5)
        self.r, self.a, self.state, self.cones, self.M = r, a, state, cones, M.copy()   # K may be built in M
        self.listed = _contact_list(model, r, None if contacts is None else contacts[0])   # the passes' lookups
        self.f, self.efc_force, self.forces = f.copy(), force, None
        quadratic = state == constraint.QUADRATIC           # stiff: a row's D rounds M + J^T D J's entries (STIFF_ROWS)
        self.stiff = bool(quadratic.any() and r.D[quadratic].max() > STIFF_ROWS * np.abs(M.diagonal()).max())
        if self.measure:                               # switch_margins, _break_margins: only when asked
            jar = r.J @ a - r.aref
            self.margins = np.minimum(self.margins, np.r_[switch_margins(r, jar, state), self._break_margins(q)])
        return a, qfrc

    def _break_margins(self, q: np.ndarray) -> np.ndarray:
        """(2,) how far the rows at solve()'s q are from a kink of their geometry or impedance (step_derivatives'
        margins [2], [3]): [0] the smallest distance [m | rad] of a row's |pos - margin| from a kink of its impedance
        (solimp's power 1: at the width, and at 0 on an equality) over its rate along its fastest dof (_impedance_kinks:
        1 for a contact's normal along its own translation; refused below 2 ROW_STEP, _refuse_impedance_kinks; the discrete
        step's R at its MAXIMP cap too: engine.constraint.impedance_caps); [1] the smallest, over
        the contacts of dim > 1, of | |n_y| - 1/2 | where its first tangent is make_frame's default
        (_refuse_frame_switches, _refuse_frame_jumps) and of |y| = |a - n (n . a)|, the sine of a capsule's or a
        cylinder's axis a from a plane's normal n (_refuse_upright_capsules, _refuse_flat_cylinders: the latter
        refused up to FLAT_REACH ROW_STEP, not 2), and of a cylinder's on a box or mesh its sine, on a box |n . a| too
        (_refuse_cylinders_on_faces: refused where its rim's depth is within FLAT_REACH ROW_STEP of all below the
        face, or on a box |n . a| below 2 ROW_STEP, each times its rate), dimensionless. inf where there is no such row."""
        r, contacts = self.r, self.contacts
        _, gap, rate, _ = self._impedance_kinks()
        kinks = np.divide(np.abs(gap), rate, out=np.full(len(gap), np.inf), where=rate > 0).min(initial=np.inf)
        if contacts is None or not len(r.contact_dim):
            return np.array([kinks, np.inf])
        frame, model = contacts[0].frame, self.model
        side = np.abs(np.abs(frame[:, 0, 1]) - 0.5)
        frames = side[self._default_frames() & (r.contact_dim > 1) & (r.contact_row >= 0)].tolist()
        axes = self._axes_on_planes(geoms.CAPSULE) + self._axes_on_planes(geoms.CYLINDER)
        poses = body_poses(model, q) if axes or self._cylinders_on_faces() else None
        frames += [self._axis_sine(c, g2, poses)[2] for c, _, g2 in axes]
        for c, cylinder, side, other in self._cylinders_on_faces():   # flat on a box's or mesh's face, or along a box's
            tilt, _, along = self._axis_tilt(c, cylinder, q, poses, side)
            frames += [tilt, along] if other == geoms.BOX else [tilt]
        return np.array([kinks, min(frames, default=np.inf)])

    def _impedance_kinks(self) -> tuple:
        """(first (k,), gap (k,), rate (k,), cap (k,) bool): engine.constraint.impedance_kinks of the optimum's rows
        (gap: the distance of |pos - margin| from a kink, solimp's power 1), under the discrete step its impedance_caps
        too (cap: those), and a bound on each one's |d pos / dq_k| along q's tangent
        directions, max_k |J_k| of the row its pos moves with: a contact's normal row (a pyramid's: the mean of its first
        two edges), a limit's or joint's or tendon's equality's row; a connect's or weld's 2-norm over its rows (its
        |pos| moves by r_hat . dpos, within that norm)."""
        r, contacts = self.r, None if self.contacts is None else self.contacts[0]
        first, gap = constraint.impedance_kinks(self.model, r, contacts)
        cap = np.zeros(len(first), bool)
        if self.discrete is not None:                  # the discrete step's R at its MAXIMP cap: a kink too
            capped, cap_gap = constraint.impedance_caps(self.model, r, contacts, self.discrete[0])
            first, gap, cap = np.r_[first, capped], np.r_[gap, cap_gap], np.r_[cap, np.ones(len(capped), bool)]
        rate = np.zeros(len(first))
        for k, i in enumerate(first.tolist()):
            if r.type[i] == constraint.CONTACT_PYRAMIDAL:
                normal = (r.J[i] + r.J[i + 1]) / 2                       # the edges J_n +- mu J_t
            elif r.type[i] == constraint.EQUALITY:
                size = constraint.impedance_block(self.model, r, i)[0]
                normal = np.sqrt((r.J[i:i + size] ** 2).sum(axis=0))
            else:
                normal = r.J[i]
            rate[k] = np.abs(normal).max(initial=0.0)
        return first, gap, rate, cap

    def _refuse_impedance_kinks(self):
        """InvalidStateError where a row's impedance would reach its kink within 2 ROW_STEP along a dof: solimp's power 1
        at |pos - margin| = width, where its ramp meets dmax, or an equality's at pos = 0 (engine.constraint.
        impedance_kinks), gap < 2 ROW_STEP max_k |d pos / dq_k| (_impedance_kinks' bound): its D, K imp and aref have a
        kink there, the step is not differentiable (MuJoCo's centred differences take the mean of the two sides), whichever way the
        rows' q-derivatives are taken. Powers above 1 are C1 at the width and at the midpoint: not refused. Under the
        discrete step, also where a row's R meets its MAXIMP cap within that reach (engine.constraint.impedance_caps:
        R = max((1 - imp) / (imp s), (1 - MAXIMP) / MAXIMP) diagA has a kink there; reachable with dmax above ~0.9998)."""
        first, gap, rate, cap = self._impedance_kinks()
        if not len(first):                             # no row with a kink (solimp's power above 1)
            return
        near = np.abs(gap) < 2 * ROW_STEP * rate
        if near.any():
            k = int(np.flatnonzero(near)[0])
            if cap[k]:
                raise InvalidStateError(
                    f"step_derivatives(constraints=True): row {first[k]}'s regulariser R meets its MAXIMP cap (the "
                    f"discrete step's R = max((1 - imp) / (imp s), (1 - MAXIMP) / MAXIMP) diagA) within {2 * ROW_STEP:g} "
                    f"of q along a dof ({gap[k]:.2e} from it in pos, {gap[k] / rate[k]:.2e} in q at its fastest dof): "
                    "R has a kink there and the step is not differentiable; linearise at a nearby state, or use a "
                    "solimp dmax further below 0.9999")
            raise InvalidStateError(
                f"step_derivatives(constraints=True): row {first[k]}'s impedance (solimp power 1) reaches its kink "
                f"within {2 * ROW_STEP:g} of q along a dof ({gap[k]:.2e} from it in pos, {gap[k] / rate[k]:.2e} in q "
                "at its fastest dof: |pos - margin| = width, where its linear ramp "
                "meets dmax, or an equality's pos = 0, where |pos| turns) and the step is not differentiable there; "
                "linearise at a nearby state, or use solimp's power > 1")

    def _times_S(self, X: np.ndarray) -> np.ndarray:
        """S X (nefc, k): the derivative of the rows' forces in jar (minus sign aside) applied to X."""
        r, state = self.r, self.state
        Y = np.where((state == constraint.QUADRATIC)[:, None], r.D[:, None] * X, 0.0)
        for first, Hc in self.cones.items():
            Y[first:first + len(Hc)] = Hc @ X[first:first + len(Hc)]
        return Y

    def _refuse_switch(self):
        """InvalidStateError: the rows at a differenced q are not laid out as the optimum's."""
        raise InvalidStateError(
            f"step_derivatives(constraints=True): a constraint row appears or disappears within {2 * ROW_STEP:g} "
            "of q (a contact or limit at its switch): the step is not differentiable here; linearise at a "
            "nearby state")

    def _row_arrays(self, Q: np.ndarray, QD: np.ndarray, dofs: np.ndarray, checked: int = 0):
        """(J (n, nefc, nv), aref (n, nefc), D (n, nefc)) of the rows at each state (Q (n + checked, nq), QD (n + checked,
        nv), q moved along dofs (n + checked,)) but the last checked ones, laid out as the optimum's rows
        (InvalidStateError where a row appears or disappears at any state, the checked ones included: _refuse_switch).
        The compiled detection (every state in one call, of the pairs its dof moves: _moved_contacts) and rows (the first
        n) as the kernels give them (no ContactSet or Rows made) when both run compiled, else rows()."""
        model, held = self.model, self.r
        contacts = collision.has_contacts(model)
        if not self._rows_compiled():
            return self._stacked_rows(Q, QD, checked)
        arrays, nc, nefc, n = None, len(held.contact_dim), held.nefc, len(Q) - checked
        if contacts:
            found, moved = self._moved_contacts(Q, dofs)
        if contacts and not (n == 0 and (nc == 0 or self._one_side(found[:, 3:6]))):   # none found where none is held
            floats, ints = self._every_contact(found, moved)
            order = self._held_order(floats[:, :3].reshape(len(Q), nc, 3), ints[:nc])   # the optimum's ints
            if order is not None:                      # each state's contacts in the optimum's order
                order = order[..., None]
                floats = np.take_along_axis(floats.reshape(len(Q), nc, -1), order, axis=1).reshape(len(Q) * nc, -1)
                ints = np.take_along_axis(ints.reshape(len(Q), nc, -1), order, axis=1).reshape(len(Q) * nc, -1)
            self._refuse_frame_jumps(floats[:, 3:6].reshape(len(Q), nc, 3))
            self._refuse_clipped_jumps(floats[:n * nc, :3].reshape(n, nc, 3))
            arrays = [(floats[k * nc:(k + 1) * nc], ints[k * nc:(k + 1) * nc]) for k in range(n)]
        if n == 0:
            return np.zeros((0, nefc, model.nv)), np.zeros((0, nefc)), np.zeros((0, nefc))
        sizes, J, values, ints = constraint.compiled_row_arrays(model, Q[:n], QD[:n], arrays)
        if (sizes != [nefc, held.ne, held.nf, held.nl, nc]).any() or (ints[0].reshape(n, nefc) != held.type).any() \
                or (ints[1].reshape(n, nefc) != held.id).any():
            self._refuse_switch()
        pos, margin, K, imp, aref, D = (values[k].reshape(n, nefc) for k in (0, 1, 6, 8, 11, 5))
        return (J.reshape(n, nefc, model.nv), *self._tangent_impedance(pos, margin, K, imp, aref, D))

    def _moved_contacts(self, Q: np.ndarray, dofs: np.ndarray) -> tuple:
        """(floats (m, 28), moved (n, nc) bool): the compiled detection's packed contacts at each state (Q (n, nq), q
        moved along dofs (n,)) of the optimum's contacts its dof moves (moved; m of them in all, state by state),
        InvalidStateError (_refuse_switch) unless each state has those (count, dim, bodies). Each state collides only the
        pairs its dof moves (_detect_subset), posing only the bodies its dof moves, the others as at q (_points' base:
        detect's along); the optimum's other contacts, whose geoms it does not move, are as at q (_every_contact)."""
        model = self.model
        constraint.prepare_compiled(model)
        subset, moved = self._detect_subset(dofs)
        ncon, floats, ints, near = native.detect_arrays(model, Q, subset, (self.base, dofs))
        if near:
            collision.warn_near(model, near, stacklevel=6)
        if (ncon != moved.sum(axis=1)).any():
            self._refuse_switch()
        if (ints != self.contacts[0].packed()[1][np.nonzero(moved)[1]]).any():   # dim, bodies: each state's moved ones
            self._refuse_switch()
        return floats, moved

    def _every_contact(self, floats: np.ndarray, moved: np.ndarray) -> tuple:
        """(floats (n nc, 28), ints (n nc, 3)): every contact of the optimum at each of n states, packed, from those the
        states' dofs move (_moved_contacts' floats and moved (n, nc)), the others the optimum's own (at q)."""
        at_q = self.contacts[0].packed()
        every = np.repeat(at_q[0][None], len(moved), axis=0)
        every[moved] = floats
        return every.reshape(-1, at_q[0].shape[1]), np.tile(at_q[1], (len(moved), 1))

    def _detect_subset(self, dofs: np.ndarray) -> tuple:
        """(subset (n, P), moved (n, nc)) bool for states of q moved along dofs (n,): the pairs each state's detection
        collides (native.detect_arrays' subset, P = ncand + nmissing) -- those its dof moves one geom of but not the other
        (a contact may appear), and those with a contact at q (self.contacts) it moves one or both geoms of (their
        contacts move) -- and the contacts at q among them (moved): the others' geoms are where they were at q."""
        model, at_q = self.model, self.contacts[0].geom
        apart, either, index = _pair_motions(model)
        if not len(at_q):                              # no contact at q: the pairs a dof moves apart alone
            return apart[dofs], np.zeros((len(dofs), 0), bool)
        touching = np.zeros(apart.shape[1], bool)                          # the pairs with a contact at q
        touching[[k for pair in self.listed.geom for k in index.get(tuple(pair), ())]] = True
        subset = (apart | (either & touching))[dofs]                       # (n, P), C order: as the kernel reads it
        geom_dofs = model.geom_dofs
        moved = (geom_dofs[at_q[:, 0]] | geom_dofs[at_q[:, 1]]).T[dofs]
        return subset, moved

    def _proven_still(self, still: np.ndarray, poses: tuple) -> np.ndarray:
        """(len(still),) bool: the dofs in still (moving no differenced row) along which no contact can appear or leave
        within 2 ROW_STEP of q, proven from the poses at q (the bodies' (xpos, xmat)), so that terms need not detect
        at their points; the others are detected there as before (compiled where COMPILED_PIECES:
        cpp/constraint_derivative.h's proven_still, function by function as this text, _rooms, _separation,
        _touching_rooms, _segment_distance). Moved by t along a dof, every body it moves turns about one fixed axis (or
        slides), so each point's path is at most |t| times its speed at q, which
        is at most |axis| (|c - xpos_b| + anchor + reach) for a geom's points within reach of its centre c on a turning
        dof (b its joint's body), |axis| on a sliding one (_still_tables). Along a dof, every pair whose contacts it
        may change (_detect_subset's) must keep them with room beyond 2 ROW_STEP times its geoms' speeds, plus 1e-9 of
        the scene's size for the poses' rounding (_rooms): no contact for a pair without one at q, the same ones for a
        pair with some (_touching_rooms). Each pair is checked at its geoms' fastest dofs, those that fail dof by dof.
        A scene of size 1e150 or more (or not finite) proves nothing: below it no square overflows, every lever and
        room is finite (or -inf: not known)."""
        model, contacts = self.model, self.contacts[0]
        if contacts.geom is None or (contacts.geom < 0).any():           # a contact of no geom pair: not followed
            return np.zeros(len(still), bool)
        xpos, xmat = poses
        if COMPILED_PIECES and native.on:                                # the compiled proof, one call
            return native.PROVEN_STILL(model, still, _still_kernel_tables(model), self._still_state(poses), None)
        t = _still_tables(model)
        pair, reach, local, frame, body, anchor, turn, slide, gbody = (t.pair, t.reach, t.local, t.frame, t.body, t.anchor,
                                                                        t.turn, t.slide, t.gbody)
        apart, either, index = _pair_motions(model)
        X, M = np.concatenate([xpos, [[0.0, 0.0, 0.0]]]), np.concatenate([xmat, [np.eye(3)]])[gbody]
        R, centre = M @ frame, (M @ local[:, :, None])[:, :, 0] + X[gbody]     # the geoms' frames at q
        # each geom's points' speed along each dof (inf where a plane turns); |c - x| from |c|^2 + |x|^2 - 2 c . x
        rate, x = turn[still][:, None], xpos[body[still]]
        scale = max(1.0, np.abs(centre).max(), np.abs(x).max())
        if not (scale < 1e150 and np.isfinite(centre).all() and np.isfinite(x).all()):   # else squares may overflow
            return np.zeros(len(still), bool)
        square = (centre * centre).sum(axis=1) + (x * x).sum(axis=1)[:, None] - 2 * (x @ centre.T)
        lever = np.sqrt(np.maximum(square, 0.0)) + (1e-7 * scale + anchor[still][:, None]) + reach   # its rounding in
        speed = np.where(model.geom_dofs[:, still].T, slide[still][:, None] + rate * lever, 0.0)
        touching = self._touching_pairs()
        if any(key not in index for key in touching):                   # a contact of no candidate: not followed
            return np.zeros(len(still), bool)
        held = np.zeros(len(pair), bool)
        held[[p for key in touching for p in index.get(key, ())]] = True
        moves, moved = apart[still], either[still]
        needed = moves.any(axis=0) | (moved.any(axis=0) & held)            # the pairs some dof may change
        g1, g2, slack = pair[:, 0], pair[:, 1], 1e-9 * scale
        fastest = speed.max(axis=0)
        travel = 2 * ROW_STEP * (fastest[g1] + fastest[g2]) + slack
        room = self._rooms(needed, held, travel, touching, centre, R)
        fail = np.flatnonzero(needed & ~(room > travel))
        if not fail.size:
            return np.ones(len(still), bool)
        need = moves[:, fail] | (moved[:, fail] & held[fail])
        travel = 2 * ROW_STEP * (speed[:, g1[fail]] + speed[:, g2[fail]]) + slack
        return ~(need & ~(room[fail] > travel)).any(axis=1)

    def _still_state(self, poses: tuple) -> dict:
        """The compiled proof's state (cpp/constraint_derivative.h's StillState): the poses at q (xpos, xmat) and the
        contacts there, packed, with their geom pairs."""
        contacts, (xpos, xmat) = self.contacts[0], poses
        floats, ints = contacts.packed()
        return {"xpos": np.ascontiguousarray(xpos), "xmat": np.ascontiguousarray(xmat), "floats": floats, "ints": ints,
                "geom": np.ascontiguousarray(contacts.geom, dtype=np.int64)}

    def _rows_compiled(self) -> bool:
        """Whether _row_arrays detects and builds the points' rows by the compiled kernels (no Rows or ContactSet made):
        the compiled backend running the model, not the discrete step's rows, no left-out pair where it collides."""
        model = self.model
        return (self.discrete is None and native.on and native.runs(model)
                and not (collision.has_contacts(model) and model.unsupported))

    def _checks_compiled(self) -> bool:
        """Whether _checked_still runs: the compiled pieces, the points' detection compiled (_rows_compiled), contacts
        of geom pairs at q."""
        return bool(COMPILED_PIECES and self._rows_compiled() and self.contacts is not None
                    and self.contacts[0].geom is not None)

    def _checked_still(self, still: np.ndarray, poses: tuple, q: np.ndarray) -> np.ndarray:
        """The dofs of still (those moving no row, when none is differenced) that terms must still detect at their
        points (_points, _held_forces): none where the compiled call (native.PROVEN_STILL with its check,
        cpp/bindings.cpp's still_check) proves each (_proven_still) or detects it at its points as _moved_contacts
        does and finds q's contacts kept as _moved_contacts and _one_side require; else those the proof leaves, for
        the NumPy text to find what differs and name it (or take the frames' general path). Warns of a left-out pair
        that may touch at a point (collision.warn_near), as _moved_contacts."""
        model, contacts = self.model, self.contacts[0]
        if (contacts.geom < 0).any():                                      # a contact of no geom pair: the text's
            return still[~self._proven_still(still, poses)]
        constraint.prepare_compiled(model)
        proven, status, near = native.PROVEN_STILL(model, still, _still_kernel_tables(model), self._still_state(poses),
                                                   np.ascontiguousarray(q, dtype=np.float64))
        if len(near):
            collision.warn_near(model, near.tolist(), stacklevel=4)
        return still[:0] if status == 0 else still[~proven]

    def _rooms(self, needed: np.ndarray, held: np.ndarray, travel: np.ndarray, touching: dict, centre: np.ndarray,
               R: np.ndarray) -> np.ndarray:
        """(P,) how far [m] the geoms of each pair (_pair_motions' order) may move before their contacts may change
        (_proven_still; -inf: not known). held: the pairs with contacts at q (_touching_rooms'). The others: the room
        above detect's bounding-sphere filter (mj_filterSphere: |c1 - c2| - r1 - r2, or a plane's n . (c - p) - r, less
        margin + gap), and where that is below travel (the most a dof moves them) and needed, the room above the narrow
        phase's margin (_separation, less 10 ccd_tolerance: GJK's). A pair without a narrow phase here (its warning:
        bound inf), or two candidates of one geom pair, is not known."""
        model = self.model
        t = _still_tables(model)
        pair, bound, sphere, flat, plane, other, lift = t.pair, t.bound, t.sphere, t.flat, t.plane, t.other, t.lift
        gap = centre[pair[:, 0]] - centre[pair[:, 1]]
        with np.errstate(invalid="ignore"):
            room = np.sqrt((gap * gap).sum(axis=1)) - sphere             # nan where no sphere test
        if flat.size:
            height = ((centre[other] - centre[plane]) * R[plane, :, 2]).sum(axis=1) - lift
            room[flat] = np.fmax(room[flat], height)
        room[np.isnan(room)] = -np.inf
        short = np.flatnonzero(needed & ~held & (room <= travel) & (bound < np.inf))
        if short.size:
            slack = bound[short] + 10 * model.opt.ccd_tolerance
            room[short] = np.maximum(room[short], self._separation(pair[short], R, centre, travel[short] + slack) - slack)
        room[held] = -np.inf
        index = _pair_motions(model)[2]
        for key, rest in self._touching_rooms(touching, centre, R).items():
            room[index[key][0]] = rest
        return room

    def _separation(self, pair: np.ndarray, R: np.ndarray, centre: np.ndarray, enough: np.ndarray) -> np.ndarray:
        """(P,) a lower bound [m] on the distance of each pair's geoms at q (R (ngeom, 3, 3), centre (ngeom, 3): their
        frames there; -inf: none; _rooms): a plane's (geom 1 or 2) height above it of the other's lowest point (a
        sphere's or capsule's exact, else its box's, geom_aabb in its frame), else the gap between the geoms' boxes'
        projections on the best of their six face normals and the line between their centres (each box holds its geom),
        and where that is below enough (P,) [m] and both geoms are convex shapes (a sphere, capsule, ellipsoid,
        cylinder, box, or mesh geom with its mesh), the better of it and GJK's (gjk.distance_lower_bound, run until it
        passes enough: a mesh's hull, an ellipsoid, a cylinder); two spheres or capsules their segments' distance less
        their radii (_segment_distance's bound: it, within rounding)."""
        model = self.model
        G, box = model.geoms, _still_tables(model).box
        kind, size, axis = G.geom_type, G.geom_size, R[:, :, 2]
        g1, g2 = pair[:, 0], pair[:, 1]
        out = np.full(len(pair), -np.inf)
        plane1, plane2 = kind[g1] == geoms.PLANE, kind[g2] == geoms.PLANE
        rounded = (kind == geoms.SPHERE) | (kind == geoms.CAPSULE)
        both = rounded[g1] & rounded[g2]
        solid = ~plane1 & ~plane2 & ~both
        middle = centre + (R @ box[:, :3, None])[:, :, 0]                        # each box's centre
        if solid.any():
            a, b = g1[solid], g2[solid]
            line = middle[b] - middle[a]
            unit = line / np.maximum(np.sqrt((line * line).sum(axis=1)), 1e-300)[:, None]
            n = np.concatenate([np.swapaxes(R[a], 1, 2), np.swapaxes(R[b], 1, 2), unit[:, None]], axis=1)   # (m, 7, 3)
            gap = np.abs(n @ line[:, :, None])[..., 0] - (np.abs(n @ R[a]) @ box[a, 3:, None])[..., 0] \
                - (np.abs(n @ R[b]) @ box[b, 3:, None])[..., 0]
            out[solid] = gap.max(axis=1)
        shapes = model.kept("collision_shapes")
        convex_shape = np.isin(kind, (geoms.SPHERE, geoms.CAPSULE, geoms.ELLIPSOID, geoms.CYLINDER, geoms.BOX)) | \
            ((kind == geoms.MESH) & (G.geom_dataid >= 0))                  # GJK's shapes (a mesh geom with its mesh)
        for p in np.flatnonzero(solid & (out < enough) & convex_shape[g1] & convex_shape[g2]).tolist():   # GJK's bound
            one, two = (convex.Shape(int(kind[g]), centre[g], R[g], shapes[g], 0.0) for g in (g1[p], g2[p]))
            found = gjk.distance_lower_bound(one, two, enough[p], model.opt.ccd_tolerance, model.opt.ccd_iterations)
            out[p] = max(out[p], found)
        half = np.where(kind == geoms.CAPSULE, size[:, 1], 0.0)[:, None] * axis        # a segment's half axis
        if both.any():
            a, b = g1[both], g2[both]
            far = _segment_distance(centre[a] - half[a], 2 * half[a], centre[b] - half[b], 2 * half[b])
            out[both] = far - size[a, 0] - size[b, 0]
        for flat, plane, other in ((plane1 & ~plane2, g1, g2), (plane2 & ~plane1, g2, g1)):
            if flat.any():
                p, o = plane[flat], other[flat]
                n = axis[p]
                extent = (np.abs(n[:, None] @ R[o])[:, 0] * box[o, 3:]).sum(axis=1)
                low = np.where(rounded[o], np.abs((half[o] * n).sum(axis=1)) + size[o, 0], extent)
                out[flat] = ((np.where(rounded[o, None], centre[o], middle[o]) - centre[p]) * n).sum(axis=1) - low
        return out

    def _touching_pairs(self) -> dict:
        """{(g1, g2): [its contacts]} of the geom pairs in contact at solve()'s q."""
        out = {}
        for c, pair in enumerate(self.listed.geom):
            out.setdefault(tuple(pair), []).append(c)
        return out

    def _touching_rooms(self, touching: dict, centre: np.ndarray, R: np.ndarray) -> dict:
        """{(g1, g2): room} (_rooms) of the pairs in contact at q (touching: _touching_pairs) whose contacts are known to
        stay while their points move less than room [m]: a plane (g1) against a sphere or a capsule, min |dist -
        margin| over the sphere's centre or the capsule's two ends (mjc_PlaneSphere, mjc_PlaneCapsule: a contact where
        dist < margin), the same count as at q; two spheres or capsules with one contact, margin - dist (their segments'
        distance moves no more than their points), two capsules' axes off parallel by more than a dof turns them
        (segment_weights' one pair: |a1 x a2| > 1e-4), not a default frame of dim > 1 (its tangents may jump), alone in
        its group; and each contact nearer its own than half the way to another of its group, (dim, bodies)
        (_held_order's identity): a plane's contact point, c - n (n . (c - p) + r) / 2 of the sphere's centre or the
        capsule's end c, moves no more than c and half the plane (it slides: a turning plane's speed is 1e300), within
        the pair's travel; two spheres' or capsules' point does not (two capsules' nearest points move up to 1 / sine
        their angle times as far, two spheres' 1/2 + |r1 - r2| / 2 |c1 - c2|), hence alone."""
        model, G, contacts, r = self.model, self.model.geoms, self.contacts[0], self.r
        margin, turn = _still_tables(model).margin, _still_tables(model).turn
        index, kind, size = _pair_motions(model)[2], G.geom_type, G.geom_size
        keys = [key for key in touching if len(index.get(key, ())) == 1]
        if not keys:
            return {}
        a, b = np.array(keys).T
        m = margin[[index[key][0] for key in keys]]
        count = np.array([len(touching[key]) for key in keys])
        first = np.array([touching[key][0] for key in keys])
        ints, pos = contacts.packed()[1], contacts.pos
        apart = np.sqrt(((pos[:, None] - pos[None]) ** 2).sum(axis=2))
        apart[~(ints[:, None] == ints[None]).all(axis=2)] = np.inf
        np.fill_diagonal(apart, np.inf)
        group = apart.min(axis=1) / 2
        room = np.full(len(keys), -np.inf)
        rounded = (kind == geoms.SPHERE) | (kind == geoms.CAPSULE)
        half = np.where(kind == geoms.CAPSULE, size[:, 1], 0.0)[:, None] * R[:, :, 2]   # a segment's half axis
        flat = (kind[a] == geoms.PLANE) & rounded[b]                       # a plane's: each end's dist
        if flat.any():
            pa, pb, pm = a[flat], b[flat], m[flat]
            n = R[pa, :, 2]
            height = ((centre[pb] - centre[pa]) * n).sum(axis=1) - size[pb, 0]
            lift = np.abs((half[pb] * n).sum(axis=1))
            ends = np.stack([height - lift, height + lift], axis=1)          # (k, 2): a sphere's twice
            two = kind[pb] == geoms.CAPSULE
            inside = (ends[:, 0] < pm).astype(int) + (two & (ends[:, 1] < pm))
            near = np.minimum(np.abs(ends[:, 0] - pm), np.abs(ends[:, 1] - pm))
            room[flat] = np.where(inside == count[flat], near, -np.inf)
        pairs = np.flatnonzero(rounded[a] & rounded[b] & (count == 1))     # two spheres or capsules: one contact
        if pairs.size:
            c = first[pairs]
            u, v = R[a[pairs], :, 2], R[b[pairs], :, 2]
            sine = np.sqrt(np.maximum(1.0 - (u * v).sum(axis=1) ** 2, 0.0))      # |u x v|, u and v unit
            turning = 2 * ROW_STEP * turn.max(initial=0.0) + 1e-9
            parallel = (kind[a[pairs]] == geoms.CAPSULE) & (kind[b[pairs]] == geoms.CAPSULE) & (sine <= 1e-4 + turning)
            framed = r.contact_dim[c] > 1
            if framed.any():
                framed &= self._default_frames()[c]
            grouped = np.isfinite(group[c])                                 # its point may outrun its geoms
            room[pairs] = np.where(parallel | framed | grouped, -np.inf, m[pairs] - contacts.dist[c])
        for k, key in enumerate(keys):
            room[k] = min(room[k], group[touching[key]].min())
        return dict(zip(keys, room.tolist()))

    def _points(self, q: np.ndarray, moving: np.ndarray, still: np.ndarray) -> tuple:
        """(Q (len(moving) 4 + len(still) 2, nq), dofs (len(Q),)): q moved by FD_WEIGHTS' offsets times ROW_STEP along
        each tangent direction in moving (dG/dq's differences), then by -2 and +2 ROW_STEP along each in still (those
        moving no row, not differenced: where a contact may appear or leave, _row_arrays' check), in one
        engine.configuration.integrate (compiled when the backend is); dofs: the direction each point moves along (an
        int64 array). q is kept as self.base, the state _moved_contacts' detection poses the bodies a point's dof does
        not move at."""
        model, offsets = self.model, _POINT_OFFSETS
        self.base = np.ascontiguousarray(q, dtype=np.float64)
        dofs = np.concatenate([np.repeat(moving, len(offsets)), np.repeat(still, 2)])
        size = np.concatenate([(offsets + np.zeros((moving.size, 1))).ravel(),     # np.tile's result, without its cost
                               (_CHECK_OFFSETS + np.zeros((still.size, 1))).ravel()])
        steps = np.zeros((dofs.size, model.nv))
        steps[np.arange(dofs.size), dofs] = size
        return np.ascontiguousarray(engine.configuration.integrate(model, np.repeat(q[None], dofs.size, axis=0), steps,
                                                                   1.0)), dofs

    def _stacked_rows(self, Q: np.ndarray, QD: np.ndarray, checked: int = 0):
        """_row_arrays from rows(): a Rows per state (the checked ones' only compared), stacked; every pair detected at
        each state, whichever dof moves it."""
        held = self.r
        contacts = collision.detect(self.model, Q) if collision.has_contacts(self.model) else None
        same = bool(contacts) and all(len(c) == len(held.contact_dim) for c in contacts)
        order = self._held_order(np.stack([c.pos for c in contacts]), self.contacts[0].packed()[1]) if same else None
        if order is not None:
            contacts = [c if (k == np.arange(len(k))).all() else
                        ContactSet.unpacked(self.model.nbody, *(a[k] for a in c.packed()), c.geom[k])
                        for c, k in zip(contacts, order)]
        rows = self.rows(Q, QD, contacts)
        same = all(r.nefc == held.nefc and len(r.contact_dim) == len(held.contact_dim) for r in rows)
        for name in ("type", "id", "contact_body", "contact_dim") if same else ():
            same = same and bool(np.all(np.stack([getattr(r, name) for r in rows]) == getattr(held, name)))
        if not same:
            self._refuse_switch()
        if contacts is not None:
            self._refuse_frame_jumps(np.stack([c.frame[:, 0] for c in contacts]))
            self._refuse_clipped_jumps(np.array([c.pos for c in contacts[:len(contacts) - checked]]))
        rows = rows[:len(rows) - checked]
        if not rows:
            return np.zeros((0, held.nefc, self.model.nv)), np.zeros((0, held.nefc)), np.zeros((0, held.nefc))
        J, pos, margin, K, B, imp, vel, aref, D = (np.stack([getattr(r, name) for r in rows]) for name in
                                                   ("J", "pos", "margin", "K", "B", "imp", "vel", "aref", "D"))
        if self.discrete is not None:
            return (J, *self._discrete_tangent_impedance(pos, margin, K, B, imp, vel, aref, D))
        return (J, *self._tangent_impedance(pos, margin, K, imp, aref, D))

    def _tangent_impedance(self, pos, margin, K, imp, aref, D) -> tuple:
        """(aref, D) (n, nefc) of the differenced states' rows (pos, margin, K, imp, aref, D (n, nefc) as built there)
        with each row's impedance taken at its tangent at q in the coordinate it goes with (dp: _impedance_steps): D's
        factor imp / (1 - imp) replaced by its tangent rho(q) + rho'(q) dp (rho' = impP / (1 - imp)^2) and aref's
        -K imp (pos - margin) by -K (imp(q) + impP(q) dp) (pos - margin), where R is far above its floor MINVAL (c in
        D = rho / c not changing with imp). The step's derivative is unchanged (both agree with imp's to first order at
        q) but each row's force is now a polynomial in dp times smooth factors: the differences no longer straddle the
        impedance's second-derivative jumps (solimp's midpoint; its width at power 2), 2.3e-4 of A at the midpoint
        (power 2) before, nor pass rho's pole at imp = 1 or its steep stretch at a small width (1.8 of A at width 1e-5
        with a linear imp tangent; 1.4e-3 with none). Friction loss rows, and the discrete step's rows (R and aref
        over s = 1 + h B + h^2 K imp), keep theirs."""
        r = self.r
        if not len(r.type):
            return aref, D
        held = (r.type != constraint.FRICTION_DOF) & (r.type != constraint.FRICTION_TENDON) & (r.R > R_FLOOR) \
            & (r.imp > 0) & (r.imp < 1)
        dp = self._impedance_steps(pos)
        tangent = r.imp + r.impP * dp                                        # imp's tangent, for aref
        rho = r.imp / (1 - r.imp) + r.impP / (1 - r.imp) ** 2 * dp           # rho = imp / (1 - imp)'s tangent, for D
        D = np.where(held, D * rho * (1 - imp) / imp, D)
        aref = np.where(held, aref - K * (tangent - imp) * (pos - margin), aref)
        return aref, D

    def _discrete_tangent_impedance(self, pos, margin, K, B, imp, vel, aref, D) -> tuple:
        """(aref, D) (n, nefc) of the discrete step's differenced rows (pos, margin, K, B, imp, vel, aref, D (n, nefc) as
        built there) evaluated at imp's tangent at q, imp_t = imp(q) + impP(q) dp (_impedance_steps), as
        _tangent_impedance does for the other steps: D = rho_t s_t / diagA (rho_t = imp / (1 - imp)'s tangent, s_t =
        1 + h B_t + h^2 K_t imp_t; a contact's rows by its first row's) and aref = (N - B_t vel - K_t imp_t (pos - margin
        + h vel)) / s_t (N the rest of aref s: -Jdot qd on connect and weld rows), K and B constant in imp but where
        refsafe's spring replaced them (K imp = 1 / h^2, B ~ imp^-1/2 taken at its tangent: constraint.resolved_springs).
        Each row's force is then rational in dp with no pole near it (s_t >= 1): no second-derivative jump of the
        impedance (solimp's midpoint; its width at power 2) reaches the differences, nor rho's steep stretch at a small
        width (3.7 of A at solimp 0.95 0.9999 1e-5, 7e-6 deep, with D moved to first order in imp). D stays as built
        where R is capped at MAXIMP at q (its kink refused: _refuse_impedance_kinks). Friction loss rows and rows at R's
        floor keep theirs."""
        r, h = self.r, self.discrete[0]
        if not len(r.type):
            return aref, D
        resolved = constraint.resolved_springs(self.model, r, None if self.contacts is None else self.contacts[0], h)
        dp = self._impedance_steps(pos)
        imp_t = r.imp + r.impP * dp                                        # imp's tangent
        rho_t = r.imp / (1 - r.imp) + r.impP / (1 - r.imp) ** 2 * dp       # rho = imp / (1 - imp)'s tangent
        B_t = np.where(resolved, r.B * (1 - r.impP * dp / (2 * r.imp)), B)  # B ~ imp^-1/2's tangent where resolved
        Kimp_t = np.where(resolved, K * imp, K * imp_t)                    # K imp = 1 / h^2 where resolved
        s = constraint.end_of_step_factor(h, B, K, imp)
        s_t = 1 + h * B_t + h * h * Kimp_t
        N = aref * s + B * vel + K * imp * (pos - margin + h * vel)        # aref s's part constant in imp
        first = np.arange(r.nefc)
        contact = r.type >= constraint.CONTACT_FRICTIONLESS
        first[contact] = r.contact_row[r.id[contact]]                      # a contact's R is its first row's, scaled
        s_q = constraint.end_of_step_factor(h, r.B, r.K, r.imp)
        capped = ((1 - r.imp) / (r.imp * s_q) < (1 - constraint.MAXIMP) / constraint.MAXIMP)[first]
        scale = (rho_t * s_t * (1 - imp) / (imp * s))[:, first]            # D's rho s moved to rho_t s_t
        held = (r.type != constraint.FRICTION_DOF) & (r.type != constraint.FRICTION_TENDON) & (r.R > R_FLOOR) \
            & (r.imp > 0) & (r.imp < 1)
        D = np.where(held & ~capped, D * scale, D)
        aref = np.where(held, (N - B_t * vel - Kimp_t * (pos - margin + h * vel)) / s_t, aref)
        return aref, D

    def _impedance_steps(self, pos: np.ndarray) -> np.ndarray:
        """(n, nefc): each row's step from q in the coordinate its impedance goes with (engine.constraint.impedance_block), at
        the states whose rows' pos (n, nefc) are given: a contact's distance (its first row's pos), a limit's or a
        joint's or tendon's equality's pos, a connect's or weld's |pos| over its block to first order, r_hat . dpos
        (r_hat = pos / |pos| at q; 0 where pos is 0 there, impP being 0 then but at power 1, refused)."""
        r, model = self.r, self.model
        first = np.arange(r.nefc)
        contact = r.type >= constraint.CONTACT_FRICTIONLESS
        first[contact] = r.contact_row[r.id[contact]]
        dp = pos[:, first] - r.pos[first]
        i = 0
        while i < r.ne:
            size = constraint.impedance_block(model, r, i)[0]
            if size > 1:
                norm = np.linalg.norm(r.pos[i:i + size])
                hat = r.pos[i:i + size] / norm if norm > 0 else np.zeros(size)
                dp[:, i:i + size] = ((pos[:, i:i + size] - r.pos[i:i + size]) @ hat)[:, None]
            i += size
        return dp

    def _one_side(self, normals: np.ndarray) -> bool:
        """Whether the normals of the optimum's contacts and those the states' dofs move (normals (..., 3), as detected,
        any order; the others are the optimum's) are all on one side of make_frame's switch (|n_y| < 1/2 for all, or for
        none): then no state's contact crosses it in whatever order _held_order would lay them (_refuse_frame_jumps finds
        none). _row_arrays then skips both where it builds no rows (only checks states)."""
        side = tangent_from_y(self.contacts[0].frame[:, 0])
        one = bool(side.all())
        return (one or not side.any()) and bool((tangent_from_y(normals) == one).all())

    def _held_order(self, pos: np.ndarray, ints: np.ndarray) -> np.ndarray:
        """(n, nc) int: the order that lays each state's contacts (positions pos (n, nc, 3), as many as the optimum's) out
        as the optimum's (ints (nc, 3): their packed ints, ContactSet.packed's): among the optimum's contacts of one dim
        and pair of bodies, each takes the state's nearest where those are all distinct (a geom pair's contacts may come
        in another order a ROW_STEP away: a capsule across or along a box's edge, mjc_CapsuleBox, swaps its two within
        1e-6 and A was 1e2 to 1e4 times off), else the order as detected; None where that is every state's (each
        contact nearer its own than half the way to another of its group: the common case, checked first)."""
        held = self.contacts[0]
        if len(held) < 2:
            return None
        apart = np.linalg.norm(held.pos[:, None] - held.pos[None], axis=-1)
        apart[~(ints[:, None] == ints[None]).all(axis=-1) | np.eye(len(held), dtype=bool)] = np.inf
        if (np.linalg.norm(pos - held.pos, axis=-1) < apart.min(axis=1) / 2).all():
            return None
        order = np.repeat(np.arange(len(held))[None], len(pos), axis=0)
        keys, group = np.unique(ints, axis=0, return_inverse=True)
        for g in range(len(keys)):
            idx = np.flatnonzero(group.ravel() == g)
            if idx.size < 2:
                continue
            gap = np.linalg.norm(pos[:, None, idx] - held.pos[idx][None, :, None], axis=-1)   # (n, held, state)
            nearest = gap.argmin(axis=2)
            distinct = (np.sort(nearest, axis=1) == np.arange(idx.size)).all(axis=1)
            order[:, idx] = np.where(distinct[:, None], idx[nearest], idx[None])
        return order

    def _refuse_frame_jumps(self, normals: np.ndarray):
        """InvalidStateError where a contact (dim > 1) whose first tangent is make_frame's default (y0 - n (n . y0)
        normalised, y0 = (0, 1, 0) where |n_y| < 1/2, else (0, 0, 1); not one its primitive gives, as a capsule's on a
        plane) has its normal's |n_y| on the other side of 1/2 at a differenced state than at q (normals (n, nc, 3), the
        contacts' at the states _row_arrays builds, within 2 ROW_STEP of q along each dof): its tangents jump between
        the differences' points, the friction rows with them (an analytic segment pair's: _refuse_frame_switches)."""
        r, frame = self.r, self.contacts[0].frame
        n, side = frame[:, 0], tangent_from_y(frame[:, 0])
        jumps = self._default_frames() & (r.contact_dim > 1) & np.any(tangent_from_y(normals) != side, axis=0)
        if jumps.any():
            c = int(np.flatnonzero(jumps)[0])
            raise InvalidStateError(
                f"step_derivatives(constraints=True): contact {c}'s normal has its y component {n[c, 1]:.7f}, "
                f"crossing +-0.5 within {2 * ROW_STEP:g} of q: its frame's default tangent switches there from the "
                "world's y axis to its z axis (MuJoCo's mju_makeFrame), the friction rows with it: the step is not "
                "differentiable there; linearise at a nearby state")

    def _clipped_contacts(self) -> np.ndarray:
        """(nc,) bool: the contacts at solve()'s q from a geom pair MuJoCo's multi-contact clips (convex.polygon_pair: two
        boxes or meshes, cylinders with cylinders, boxes or meshes, a capsule with a cylinder or a mesh; two boxes'
        mjc_BoxBox) that gives that pair more than one contact there, and that hold a force at the optimum (a row not
        satisfied: a jump of a contact whose rows are all satisfied moves no force, their rows held there)."""
        contacts, G, r = self.contacts[0], self.model.geoms, self.r
        if contacts.geom is None or not len(contacts.geom):
            return np.zeros(len(contacts), bool)
        kinds = np.where(contacts.geom >= 0, G.geom_type[np.maximum(contacts.geom, 0)], -1).tolist()   # (nc, 2)
        clipped = np.array([k == [geoms.BOX, geoms.BOX] or convex.polygon_pair(tuple(sorted(k)), bool(G.multiccd))
                            for k in kinds], bool)
        _, group, count = np.unique(contacts.geom, axis=0, return_inverse=True, return_counts=True)
        rows = (r.type >= constraint.CONTACT_FRICTIONLESS) & (self.state != constraint.SATISFIED)
        return clipped & (count[group.ravel()] > 1) & np.isin(np.arange(len(contacts)), r.id[rows])

    def _refuse_clipped_jumps(self, pos: np.ndarray):
        """InvalidStateError where a multi-contact pair's contacts (_clipped_contacts) jump or kink between the
        differences' points (pos (4 k, nc, 3): the contacts at q moved by FD_WEIGHTS' offsets times ROW_STEP along each
        of k dofs, in the optimum's order): the clipped polygon changes topology there (a vertex crossing the other
        face's plane or an edge's clipping plane) or the largest quadrilateral of more than 4 clipped points
        (convex.polygon_quad) switches or ties (a regular polygon inside a face: a hexagonal mesh's, a cylinder's
        16-gon, two squares turned 45 degrees) while the count stays, and the differences straddle it (A was up to 2.1
        of its largest entry off). Found by a point's third difference along a dof, or its fourth through its point at q
        (self.contacts[0], in the same order: a contact set that differs only in a sliver around q), above CLIP_JUMP
        max(1, |p|); a tie that rounding breaks the same way at every point is not seen (MuJoCo's own differences may
        then jump)."""
        clipped = self._clipped_contacts()
        if not clipped.any() or not len(pos):
            return
        stencil = pos[:, clipped].reshape(-1, len(FD_WEIGHTS), int(clipped.sum()), 3)
        at_q = self.contacts[0].pos[clipped]
        # p(2h) - 2 p(h) + 2 p(-h) - p(-2h), and p(-2h) - 4 p(-h) + 6 p(0) - 4 p(h) + p(2h) (q's own point in)
        third = np.abs(np.einsum("kscx,s->kcx", stencil, [-1.0, 2.0, -2.0, 1.0]))
        fourth = np.abs(np.einsum("kscx,s->kcx", stencil, [1.0, -4.0, -4.0, 1.0]) + 6 * at_q)
        jump = np.maximum(third, fourth).max(axis=2)                                   # (k, clipped)
        far = np.maximum(1.0, np.maximum(np.abs(stencil).max(axis=(1, 3)), np.abs(at_q).max(axis=1)))
        if (jump > CLIP_JUMP * far).any():
            k, c = np.argwhere(jump > CLIP_JUMP * far)[0]
            c, jump = int(np.flatnonzero(clipped)[c]), jump[k, c]
            g1, g2 = self.contacts[0].geom[c].tolist()
            raise InvalidStateError(
                f"step_derivatives(constraints=True): the multi-contact of geoms {g1} and {g2} (contact {c}) jumps "
                f"within {2 * ROW_STEP:g} of q along a dof (its point's third or fourth difference there, q's point "
                f"in, {jump:.1e} m): MuJoCo's clipped polygon changes there (a vertex crossing a face's plane, or its "
                "largest quadrilateral of more than 4 points switching or tied) and the step is not differentiable; "
                "linearise at a nearby state")

    def _default_frames(self) -> np.ndarray:
        """(nc,) bool: the contacts at solve()'s q whose first tangent is make_frame's default, y0 - n (n . y0)
        normalised, y0 = (0, 1, 0) where |n_y| < 1/2, else (0, 0, 1) (not one their primitive gives, as a capsule's on
        a plane)."""
        frame = self.contacts[0].frame
        n = frame[:, 0]
        y0 = tangent_axis(n)
        y = y0 - n * np.einsum("ci,ci->c", n, y0)[:, None]                 # make_frame's default first tangent
        return np.abs(y / np.linalg.norm(y, axis=1)[:, None] - frame[:, 1]).max(axis=1, initial=0.0) < 1e-9

    def _held_forces(self, Q: np.ndarray, QD: np.ndarray, dofs: np.ndarray, checked: int = 0) -> tuple:
        """(J (n, nefc, nv), force (n, nefc)) of each state's rows but the last checked ones' (_row_arrays, which checks
        those too; dofs: the dof each state moves q along), G(q, qd; a_c) = -J^T force their generalized force:
        force(J a_c - aref) of the rows built at another (q, qd), each row's force in the state it holds at the optimum
        (held_forces), the rows in self.analytic zero."""
        J, aref, D = self._row_arrays(Q, QD, dofs, checked)
        if not len(J):                                 # the checked states alone: no rows built
            return J, np.zeros((0, self.r.nefc))
        force = held_forces(self.r, J @ self.a - aref, self.state, D)
        force[:, self.analytic] = force[:, self.anchored] = 0.0      # taken analytically (_analytic_forces)
        return J, force

    def _aref_velocity_derivative(self, q: np.ndarray, qd: np.ndarray, anchor_dJ: np.ndarray) -> np.ndarray:
        """d aref/dqd (nefc, nv): -B J, and on the connect and weld rows also MuJoCo 4's -d(Jdot qd)/dqd: Jdot qd =
        sum_jk dJ[., j, k] qd_j qd_k (the time derivative along qd's tangent), so -(dJ qd + qd dJ) from the anchored
        rows' dJ (anchor_dJ, _anchor_rows); without them (ANALYTIC_ROWS False, the discrete step) centred differences
        of a unit step in qd, exact (rounding aside) as aref is quadratic in qd."""
        r, nv = self.r, self.model.nv
        out = -r.B[:, None] * r.J
        if self.discrete is not None:                  # at the step's end: (aref - h K imp vel) / s
            h = self.discrete[0]
            out = -((r.B + h * r.K * r.imp) / constraint.end_of_step_factor(h, r.B, r.K, r.imp))[:, None] * r.J
        anchored = set(self.anchored.tolist())
        if any(self.model.eq_type[r.id[i]] in (CONNECT, WELD) and i not in anchored for i in range(r.ne)):
            E = np.eye(nv)
            rows = self.rows(np.repeat(q[None], 2 * nv, axis=0), np.concatenate([qd + E, qd - E]),
                             None if self.contacts is None else self.contacts * (2 * nv))
            out[:r.ne] = 0.5 * np.array([rows[k].aref[:r.ne] - rows[nv + k].aref[:r.ne] for k in range(nv)]).T
        if self.anchored.size:
            out[self.anchored] = -r.B[self.anchored, None] * r.J[self.anchored] - anchor_dJ @ qd - qd @ anchor_dJ
        return out

    def _moving_dofs(self, q: np.ndarray) -> np.ndarray:
        """(nv,) bool: the dofs whose motion moves a row differenced (dG/dq is differenced along them; along the others
        it is zero but for the rows in self.analytic: no other row's geometry, Jacobian, distance or parameters move): a
        differenced contact's bodies' chains (their links' dofs and their ancestors'), a differenced joint limit's
        joint, and a limited joint whose limit row would appear or leave within 4 ROW_STEP (a ball's always), so that
        the differences name that switch; a dof friction loss row none; every dof with a row of another kind (a
        differenced equality: a tendon's, or a connect's or weld's at R's floor; a tendon's friction loss), with a
        limited tendon (its limit row may appear along any dof it spans) or at the discrete step's end (its diagApprox,
        diag(M^), moves with every q). Along the directions left out, derivatives() looks for a contact appearing or
        leaving (_points, _row_arrays)."""
        model, r = self.model, self.r
        differenced = np.ones(r.nefc, bool)
        differenced[self.analytic] = differenced[self.anchored] = False
        if self.discrete is not None or differenced[:r.ne].any() or (r.type == constraint.FRICTION_TENDON).any() \
                or (model.opt.limit and model.tendon_limited.any()):
            return np.ones(model.nv, bool)
        at_limit = r.id[(r.type == constraint.LIMIT_JOINT) & differenced]
        if model.opt.limit:
            limited, adr, low, high, margin, ball = _limited_joints(model)
            x = q[adr]                                 # a hinge's or slide's coordinate (a ball's is its quaternion's w)
            near = (np.abs(np.minimum(x - low, high - x) - margin) < 4 * ROW_STEP) | ball
            at_limit = np.concatenate([at_limit, limited[near]])
        held = np.concatenate([differenced, [True]])[r.contact_row]   # its rows differenced, or none (row -1: the True)
        chains = _body_dofs(model)[r.contact_body[held].ravel()]        # the held contacts' bodies' chains
        return _joint_dofs(model)[at_limit].any(axis=0) | chains.any(axis=0)

    # ------------------------------------------------ the rows' analytic q-derivatives

    def _analytic_plane_indices(self, xmat: np.ndarray) -> list:
        """The contacts (their indices) that are a plane on a body no dof moves (geom 1) against a sphere, a capsule or a
        box (geom 2 on a body), of dim 1 or 3 on the pyramidal cone, with R far above its floor MINVAL: _plane_contacts'
        kind; not a capsule standing on its end (its axis within 1e-6 of the normal: its frame's choice switches
        there). xmat (nbody, 3, 3): the bodies' orientations."""
        model, r, contacts, kinds, listed = self.model, self.r, self.contacts[0], _geom_kinds(self.model), self.listed
        if contacts.geom is None or not len(contacts) or geoms.PLANE not in kinds or \
                not kinds & {geoms.SPHERE, geoms.CAPSULE, geoms.BOX}:
            return []
        link = _geom_lists(model)[2]
        cone = (constraint.CONTACT_FRICTIONLESS, constraint.CONTACT_PYRAMIDAL)
        out = []
        for c, ((g1, g2), first, dim, (b1, b2), (k1, k2)) in enumerate(zip(*listed)):
            if not (first >= 0 and dim in (1, 3) and g1 >= 0 and g2 >= 0 and k1 == geoms.PLANE and b2 >= 0
                    and k2 in (geoms.SPHERE, geoms.CAPSULE, geoms.BOX) and (b1 < 0 or link[b1] < 0)
                    and r.type[first] in cone and r.R[first] > R_FLOOR):
                continue                               # b1 welded to the world: no dof moves it (dof_chain)
            if k2 == geoms.CAPSULE and 1 - (contacts.frame[c, 0] @ _geom_axis(model, xmat[b2], g2)) ** 2 < 1e-12:
                continue
            out.append(c)
        return out

    def _plane_contacts(self, q: np.ndarray, cs: list, poses: tuple) -> tuple:
        """(rows (m,), dJ (m, nv, nv), dpos (m, nv)) of the plane contacts cs (_analytic_plane_indices), d J[row, j]/dq_k at
        [., j, k]. A contact's rows are J = E Jp(b, p) (E: the normal, n +- mu t on the pyramid's edges; Jp, W the
        translational and angular Jacobians of its body b, Jp at the contact p). The primitive's point fixed in b,
        x = p + n (radius + dist / 2) (the sphere's centre, the capsule's end, the box's corner; radius 0 for a box),
        moves with Jp(b, x) = Jp(b, p) + W x (x - p), and (n constant):

            d dist = n . Jp(b, x),    dp = Jp(b, x) - n (n . Jp(b, x)) / 2
            d Jp_j(p)/dq_k = W_k x Jp_j(p) - W_j x Jp_k(p) (when k turns j: Model.dof_turns) + W_j x dp_k

        so a row e gives d (e . Jp_j)/dq_k = (e x W_j) . dp_k + P_j . (e x W_k) - P_k . (e x W_j) (P = Jp(b, p)). A
        capsule's tangent t1 = y / |y|, y = a - n (n . a) with its axis a (primitives.plane_capsule, make_frame), turns
        with it: da = W_k x a, dt1 = (1 - t1 t1^T) (1 - n n^T) da / |y|, dt2 = n x dt1 (a capsule standing on its end,
        |y| < 1e-6, is left to the differences: _analytic_plane_indices). poses: the bodies' (xpos, xmat) at q. The
        compiled step (_plane_arrays' arrays handed to it) takes these rows' terms from its own kinematics without
        making dJ: cpp/step_derivative.h's plane_forces, on the rows' linearity in e (dJ qd, dJ a_c and sum f dJ)."""
        model = self.model
        rows, bodies, arrays = self._plane_arrays(cs, poses)
        jac = {b: body_jacobian(model, q, b) for b in set(bodies.tolist())}      # (6, nv) at each body's origin
        arrays = (np.stack([jac[b] for b in bodies.tolist()]), *arrays, model.dof_turns)
        if COMPILED_PIECES and native.on:
            dJ, ddist = native.plane_contact_rows(*arrays)
        else:
            dJ, ddist = plane_contact_rows(*arrays)
        return rows, dJ, ddist

    def _plane_arrays(self, cs: list, poses: tuple) -> tuple:
        """(rows (m,), bodies (nc,), (origin, frame, pos, dist, friction, radius, dim, axis)) of the plane contacts cs
        (_analytic_plane_indices): their rows, each one's body and plane_contact_rows' arrays but the bodies' Jacobians and turns
        (origin: the body's xpos at q; radius 0 for a box; axis a capsule's of dim 3, else zero). poses: the bodies'
        (xpos, xmat) at q."""
        model, listed, size = self.model, self.listed, _geom_lists(self.model)[1]
        xpos, xmat = poses
        bodies, radius, dim, axis, rows = [], [], [], np.zeros((len(cs), 3)), []
        for i, c in enumerate(cs):
            g2, b2, d, k2 = listed.geom[c][1], listed.body[c][1], listed.dim[c], listed.kinds[c][1]
            bodies.append(b2), dim.append(d), radius.append(0.0 if k2 == geoms.BOX else size[g2])
            if k2 == geoms.CAPSULE and d > 1:
                axis[i] = _geom_axis(model, xmat[b2], g2)
            rows.extend(range(listed.row[c], listed.row[c] + (1 if d == 1 else 2 * (d - 1))))   # its rows, first on
        contacts, bodies, cs = self.contacts[0], np.array(bodies, np.intp), np.array(cs, np.intp)
        return np.array(rows, np.intp), bodies, (xpos[bodies], contacts.frame[cs], contacts.pos[cs], contacts.dist[cs],
                                                 contacts.friction[cs], np.array(radius), np.array(dim, np.int64), axis)

    def _analytic_rows(self, q: np.ndarray, poses: tuple | None) -> tuple:
        """(rows (m,), dJ (k, nv, nv), dpos (k, nv), planes): the optimum's rows whose q-derivative is analytic, d J[row,
        j]/dq_k at [., j, k] and d pos[row]/dq_k along q's tangent directions (as joints.integrate moves q), where R is
        far above its floor MINVAL (so D = imp / (c (1 - imp)), c constant: _analytic_forces):
          a hinge's or slide's limit: J = -side e_dof constant, pos = side (range - q): dJ = 0, dpos = J;
          a contact of a plane against a sphere, capsule or box (_plane_contacts), or between two spheres or capsules
          (_segment_contact): dpos = d dist on each of its rows;
          a joint equality (_joint_equality_rows): dpos = J, dJ = -poly'' on its second joint's dof.
        Connects and welds are analytic apart (_anchor_rows); every other row (elliptic cones, other pairs, tendon rows,
        a ball's limit, the discrete step's) is differenced; a dof's friction loss row has no q-derivative. None with
        ANALYTIC_ROWS False. planes: None (k = m), or, where self.step_planes (the compiled
        step's, COMPILED_PIECES), (at, count, bodies, arrays) of the plane contacts, whose count rows rows[at:at + count]
        are left out of dJ and dpos for the compiled step to take (_plane_arrays' bodies and arrays;
        cpp/step_derivative.h's plane_forces). poses: the bodies' (xpos, xmat) at q (None without contacts)."""
        model, r, nv = self.model, self.r, self.model.nv
        parts = [(np.zeros(0, np.intp), np.zeros((0, nv, nv)), np.zeros((0, nv)))]
        if not ANALYTIC_ROWS or self.discrete is not None:
            return (*parts[0], None)
        limits = np.flatnonzero(r.type == constraint.LIMIT_JOINT)
        kind = model.jnt_type[r.id[limits]]
        limits = limits[((kind == joints.HINGE) | (kind == joints.SLIDE)) & (r.R[limits] > R_FLOOR)].astype(np.intp)
        if limits.size:
            parts.append((limits, np.zeros((len(limits), nv, nv)), r.J[limits]))
        parts.append(self._joint_equality_rows(q))
        planes = self._analytic_plane_indices(poses[1]) if poses is not None else []
        deferred = None
        if planes and self.step_planes and COMPILED_PIECES:     # their rows alone; the compiled step makes dJ, dpos
            rows, bodies, arrays = self._plane_arrays(planes, poses)
            deferred = (sum(len(p[0]) for p in parts), len(rows), bodies, arrays)
            parts.append((rows, np.zeros((0, nv, nv)), np.zeros((0, nv))))
        elif planes:
            parts.append(self._plane_contacts(q, planes, poses))
        for c in sorted(set(self.pairs) - set(planes)):      # the sphere and capsule pairs (_segment_pairs)
            part = self._segment_contact(c, self.pairs[c])
            if part is not None:
                parts.append(part)
        return (*(np.concatenate(x) for x in zip(*parts)), deferred)

    def _joint_equality_rows(self, q: np.ndarray) -> tuple:
        """(rows (m,), dJ (m, nv, nv), dpos (m, nv)) of the optimum's joint equality rows (mjEQ_JOINT) whose R is far
        above its floor MINVAL: pos = x1 - ref1 - poly(x2 - ref2), J = e1 - poly'(x2 - ref2) e2 (hinges or slides:
        engine.constraint._equality_rows), so dpos = J and dJ's one entry d J[row, v2]/dq_v2 = -poly''(x2 - ref2)."""
        model, r, nv = self.model, self.r, self.model.nv
        rows = np.array([i for i in range(r.ne) if model.eq_type[r.id[i]] == JOINT and r.R[i] > R_FLOOR], np.intp)
        dJ = np.zeros((len(rows), nv, nv))
        for k, i in enumerate(rows.tolist()):
            e = r.id[i]
            j2 = model.eq_obj2id[e]
            if j2 >= 0:
                a2, v2, c = model.jnt_qposadr[j2], model.jnt_dofadr[j2], model.eq_data[e]
                dif = q[a2] - model.qpos0[a2]
                dJ[k, v2, v2] = -(2 * c[2] + 6 * c[3] * dif + 12 * c[4] * dif * dif)
        return rows, dJ, r.J[rows]

    def _segment_pairs(self, q: np.ndarray, poses: tuple | None) -> dict:
        """{c: _SegmentPair} of the contacts at q between two spheres or capsules whose nearest points are one pair
        (_segment_pair), whichever way their rows' q-derivatives are taken (_segment_contact or differenced).
        InvalidStateError where a free weight would reach its segment's end within 2 ROW_STEP along a dof,
        min(s, 1 - s) < 2 ROW_STEP max_k |ds/dq_k| (likewise t), or a clamped one come free (its multiplier, |D . d1|
        for s, reaching 0 at its rate): the nearest points stop or start sliding there (nearly parallel capsules: ds/dq
        ~ 1e6, the linearisation good only within ~1e-8), as a row appearing (_refuse_switch). poses: the bodies'
        (xpos, xmat) at q (None without contacts)."""
        contacts, listed = self.contacts, self.listed
        if contacts is None or contacts[0].geom is None:
            return {}
        kinds = (geoms.SPHERE, geoms.CAPSULE)
        cs = [c for c, (first, (k1, k2)) in enumerate(zip(listed.row, listed.kinds)) if first >= 0 and k1 in kinds
              and k2 in kinds]                         # (a kind -1: no geom)
        pairs = {c: pair for c in cs if (pair := self._segment_pair(c, q, poses)) is not None}
        for pair in pairs.values():
            if (pair.room < 2 * ROW_STEP * pair.speed).any():
                raise InvalidStateError(
                    f"step_derivatives(constraints=True): a contact's nearest points reach or leave a segment's end within "
                    f"{2 * ROW_STEP:g} of q (two capsules nearly parallel, or a sphere at a capsule's end): they jump "
                    "there and the step is not differentiable in practice; linearise at a nearby state")
        return pairs

    def _axes_on_planes(self, kind: int) -> list:
        """[(c, g1, g2)]: the contacts at solve()'s q between a plane g1 and a geom g2 of type kind (geoms.CAPSULE: those
        of dim > 1, whose frame follows the axis; geoms.CYLINDER: all, whose points follow it)."""
        contacts, listed = self.contacts, self.listed
        if contacts is None or contacts[0].geom is None or not {geoms.PLANE, kind} <= _geom_kinds(self.model):
            return []
        return [(c, g1, g2) for c, ((g1, g2), first, dim, kinds) in enumerate(zip(*listed[:3], listed.kinds))
                if first >= 0 and kinds == (geoms.PLANE, kind) and (kind != geoms.CAPSULE or dim > 1)]

    def _axis_sine(self, c: int, g2: int, poses: tuple, side: int = 1) -> tuple:
        """(axis a, normal n, |y|): y = a - n (n . a) of contact c's geom g2's axis a (g2 on the contact's body `side`,
        0 or 1) and normal n; |y| is the sine of a from n."""
        b = self.r.contact_body[c, side]
        n = self.contacts[0].frame[c, 0]
        axis = _geom_axis(self.model, poses[1][b] if b >= 0 else np.eye(3), g2)
        y = axis - n * (n @ axis)
        return axis, n, float(np.sqrt(y @ y))

    def _axis_tilt(self, c: int, g2: int, q: np.ndarray, poses: tuple, side: int = 1) -> tuple:
        """(|y|, rate, |n . a|): _axis_sine's |y| and max_k |(W2_k - W1_k) x a| (W1, W2: the contact's bodies' angular
        Jacobians), the rate of y as a nears n (and of n . a)."""
        model, bodies = self.model, self.r.contact_body[c].tolist()
        axis, n, sine = self._axis_sine(c, g2, poses, side)
        W = [body_jacobian(model, q, b)[3:] if b >= 0 else np.zeros((3, model.nv)) for b in bodies]
        rate = np.sqrt((_cross_columns(W[1] - W[0], axis) ** 2).sum(axis=0)).max(initial=0.0)
        return sine, rate, abs(float(n @ axis))

    def _refuse_upright_capsules(self, q: np.ndarray, poses: tuple | None):
        """InvalidStateError where a capsule's contact with a plane (dim > 1) would stand on its end within 2 ROW_STEP
        along a dof. Its first tangent t1 = y / |y|, y = a - n (n . a) (a the capsule's axis, n the normal:
        primitives.plane_capsule, make_frame; (1, 0, 0) at y = 0) turns by |dy| / |y|: near y = 0 the frame jumps, and
        the friction rows with it. Refused where |y| < 2 ROW_STEP max_k |(W2_k - W1_k) x a| (_axis_tilt; W1, W2: the
        plane's and the capsule's bodies' angular Jacobians; the rate of y as a nears n), whichever way the rows'
        q-derivatives are taken (an upright capsule's are differenced: _analytic_plane_indices). poses: the bodies' (xpos,
        xmat) at q (None without contacts)."""
        for c, g1, g2 in self._axes_on_planes(geoms.CAPSULE):
            if self._axis_sine(c, g2, poses)[2] >= 4 * ROW_STEP:   # rate <= 2: |W_k| <= 1 a body
                continue
            tilt, rate, _ = self._axis_tilt(c, g2, q, poses)
            if tilt < 2 * ROW_STEP * rate:
                raise InvalidStateError(
                    f"step_derivatives(constraints=True): a capsule on a plane (contact {c}, geoms {g1} and {g2}) stands "
                    f"on its end within {2 * ROW_STEP * rate:.1e} rad of q (its axis {np.arcsin(min(1.0, tilt)):.1e} rad "
                    "from the plane's normal): its contact frame's tangents follow the axis's tilt and jump where it is "
                    "upright, the friction rows with them: the step is not differentiable there; linearise at a nearby "
                    "state (tilted by 1e-5 rad or more)")

    def _refuse_flat_cylinders(self, q: np.ndarray, poses: tuple | None):
        """InvalidStateError where a cylinder's contacts with a plane come within FLAT_REACH ROW_STEP max_k
        |(W2_k - W1_k) x a| (_axis_tilt) of its lying flat (axis a along the normal n): primitives.plane_cylinder puts
        its points on the rim towards y = a - n (n . a) (the cylinder's x axis at y = 0), turning by |dy| / |y|, and
        its distances go as -radius |y|, a cone at y = 0: the step is not differentiable there, and near it the
        differenced rows' A is off by ~1.5 (ROW_STEP rate / |y|)^4 of its largest entry (a free cylinder 0.3 mm into
        a plane: 1.2e-2 at 3e-6 rad, 1.4e-4 at 1e-5, 1.9e-6 at 3e-5, 2.2e-8 at 1e-4 from MuJoCo's Richardson-extrapolated
        differences; 5.3e2 flat, where MuJoCo's own differences disagree by their size)."""
        for c, g1, g2 in self._axes_on_planes(geoms.CYLINDER):
            tilt, rate, _ = self._axis_tilt(c, g2, q, poses)
            if tilt < FLAT_REACH * ROW_STEP * rate:
                raise InvalidStateError(
                    f"step_derivatives(constraints=True): a cylinder on a plane (contact {c}, geoms {g1} and {g2}) lies "
                    f"flat within {FLAT_REACH * ROW_STEP * rate:.1e} rad of q (its axis {np.arcsin(min(1.0, tilt)):.1e} "
                    "rad from the plane's normal): its contact points follow the axis's tilt around the rim (MuJoCo's "
                    "mjc_PlaneCylinder) and its distances have a kink where it is flat: the step is not differentiable "
                    "there, nor well differenced near it; linearise at a state tilted further")

    def _cylinders_on_faces(self) -> list:
        """[(c, cylinder, side, other)]: the contacts at solve()'s q between a cylinder and a box or a mesh (MuJoCo's
        multi-contact: convex.polygon_pair), the cylinder's geom, the contact body it is on (0 or 1) and the other
        geom's type (geoms.BOX or geoms.MESH)."""
        contacts, listed, kinds = self.contacts, self.listed, _geom_kinds(self.model)
        if contacts is None or contacts[0].geom is None or geoms.CYLINDER not in kinds or \
                not kinds & {geoms.BOX, geoms.MESH}:
            return []
        out = []
        for c, (pair, first, types) in enumerate(zip(listed.geom, listed.row, listed.kinds)):
            if first >= 0 and types in _CYLINDER_FACES:
                side = types.index(geoms.CYLINDER)
                out.append((c, pair[side], side, types[1 - side]))
        return out

    def _cap_depth(self, c: int, cylinder: int, side: int, poses: tuple) -> float:
        """[m] how deep the rim of contact c's cylinder's cap facing the box or mesh (its centre e, axis a, radius rho,
        sine |y| of a from the normal n) reaches into the other's face at its deepest, its margin in: n . (e - x2) +
        rho |y| + margin, x2 = pos + n dist / 2 the contact's point on the other (n from the cylinder's side to the
        other's; the deepest rim point's, the shallowest less 2 rho |y|)."""
        model, contacts = self.model, self.contacts[0]
        n = contacts.frame[c, 0] * (1.0 if side == 0 else -1.0)           # from the cylinder into the box
        b = self.r.contact_body[c, side]
        xpos, xmat = (poses[0][b], poses[1][b]) if b >= 0 else (np.zeros(3), np.eye(3))
        axis = _geom_axis(model, xmat, cylinder)
        centre = xpos + xmat @ model.geoms.geom_pos[cylinder]
        cap = centre + axis * np.copysign(model.geoms.geom_size[cylinder, 1], n @ axis)
        x2 = contacts.pos[c] + contacts.frame[c, 0] * contacts.dist[c] / 2 * (1.0 if side == 0 else -1.0)
        y = axis - n * (n @ axis)
        return float(n @ (cap - x2) + model.geoms.geom_size[cylinder, 0] * np.sqrt(y @ y) + contacts.includemargin[c])

    def _refuse_cylinders_on_faces(self, q: np.ndarray, poses: tuple | None):
        """InvalidStateError where a cylinder's contacts with a box or a mesh (MuJoCo's multi-contact: a cap clipped
        against a face as a 16-gon, or its side line against it) jump within the differences' reach: its cap facing the
        face (|y| below FACE_TOL's sine) while its whole rim is below it, 2 radius (|y| - FLAT_REACH ROW_STEP rate) <
        depth (|y| its axis's sine from the normal, _axis_tilt; depth its rim's deepest point's, _cap_depth): the
        largest quadrilateral of the 16-gon's clipped points ties and rounding picks one, 4 contacts jumping by a
        rotation of 1e-7 rad: MuJoCo's own step jumps the same way), or, on a box, its axis along the face within 2
        ROW_STEP rate (|n . a|: its side line's two contacts jump where it is parallel; on a mesh _refuse_clipped_jumps
        sees that jump: on its side exactly, 2e-6 and 1e-5 rad from it refused there (MuJoCo's own differences 8.5e-4 to
        1.5e-3 apart), 1e-4 rad A 1.0e-10, and 12 cylinders settled on their side, MuJoCo's own differences smooth,
        within 5.2e-11). A free cylinder 0.3 mm into a box, against MuJoCo's centred differences (eps 1e-6, 2e-6 and
        4e-6, ccd_tolerance 1e-14): flat, tilted 1e-3 or 3e-3 rad, A 1.2e-1 to 1.9e-1 of its largest entry off (MuJoCo's
        own differences 2.4 to 3.3 apart), now refused; 5e-3 rad 2.3e-12, 1e-2 4.4e-12; on its side exactly 2.6e-5
        (theirs 14 apart), 2e-6 and 1e-5 rad from it refused by _refuse_clipped_jumps (theirs 3.3e-3 and 8.8e-4 apart),
        1e-4 rad 7.6e-11; on a mesh flat, 1e-3 and 1.5e-3 rad (turned 0.3 rad about its axis) 2.1e-1, 1.6e-1, 1.2e-1
        (MuJoCo's own 0.75 to 0.86 apart), now refused. Other jumps of a multi-contact's clipped points (other pairs, a
        symmetric partial clip) are refused where the differences see them (_refuse_clipped_jumps)."""
        G = self.model.geoms
        for c, cylinder, side, other in self._cylinders_on_faces():
            tilt, rate, along = self._axis_tilt(c, cylinder, q, poses, side)
            depth = self._cap_depth(c, cylinder, side, poses)
            whole = 2 * G.geom_size[cylinder, 0] * (tilt - FLAT_REACH * ROW_STEP * rate) < depth
            sideways = other == geoms.BOX and along < 2 * ROW_STEP * rate
            if whole and tilt < np.sqrt(1 - convex.FACE_TOL ** 2) or sideways:
                raise InvalidStateError(
                    f"step_derivatives(constraints=True): a cylinder on a {geoms.TYPE_NAMES[other]} (contact {c}, "
                    f"geom {cylinder}) lies {'along a face' if sideways else 'flat on a face'} (its axis "
                    f"{np.arcsin(min(1.0, tilt)):.1e} rad from the face's normal, its whole rim within "
                    f"{FLAT_REACH * ROW_STEP * rate:.1e} rad of being below it, or its axis within "
                    f"{2 * ROW_STEP * rate:.1e} of the face's plane): MuJoCo's multi-contact clips its cap or side "
                    "against the face and the clipped contacts jump there (MuJoCo's own step too): the step is not "
                    "differentiable; linearise at a state tilted further")

    def _refuse_frame_switches(self):
        """InvalidStateError where a contact between two spheres or capsules (self.pairs, dim > 1) has its normal's y
        component within 2 ROW_STEP of +-1/2 along a dof: its frame's first tangent (make_frame(n, 0): y0 - n (n . y0)
        normalised, y0 = (0, 1, 0) where |n_y| < 1/2, else (0, 0, 1)) jumps there, the friction rows with it.
        | |n_y| - 1/2 | < 2 ROW_STEP max_k |dn_y / dq_k|, dn = (1 - n n^T) dD / |D| (_segment_pair)."""
        r, contacts = self.r, self.contacts
        for c, pair in self.pairs.items():
            if r.contact_dim[c] < 2:
                continue
            n = contacts[0].frame[c, 0]
            rate = np.abs((pair.dD[1] - n[1] * (n @ pair.dD)) / pair.L).max(initial=0.0)
            if abs(abs(n[1]) - 0.5) < 2 * ROW_STEP * rate:
                raise InvalidStateError(
                    f"step_derivatives(constraints=True): contact {c}'s normal (two spheres or capsules) has its y "
                    f"component {n[1]:.7f}, reaching +-0.5 within {2 * ROW_STEP:g} of q: its frame's default tangent "
                    "switches there from the world's y axis to its z axis (MuJoCo's mju_makeFrame), the friction rows "
                    "with it: the step is not differentiable there; linearise at a nearby state")

    def _segment_pair(self, c: int, q: np.ndarray, poses: tuple):
        """_SegmentPair of contact c between two spheres or capsules (a sphere a segment of length 0;
        primitives.sphere_sphere, sphere_capsule, capsule_capsule), or None where its segments are parallel (two
        contacts) or the contact is not at their nearest points: each geom's segment a0 + s d (a0, d fixed in its
        body), the bodies' Jacobians at their origins, then segment_pair (compiled where COMPILED_PIECES: native.
        segment_pair). poses: the bodies' (xpos, xmat) at q."""
        model, r, contacts, G = self.model, self.r, self.contacts[0], self.model.geoms
        ends, frames, radius = [], [], []
        for geom, body in zip(contacts.geom[c].tolist(), r.contact_body[c].tolist()):   # each geom's segment a0 + s d
            xpos, xmat = (poses[0][body], poses[1][body]) if body >= 0 else (np.zeros(3), np.eye(3))
            centre = xpos + xmat @ G.geom_pos[geom]
            half = _geom_axis(model, xmat, geom) * (G.geom_size[geom, 1] if G.geom_type[geom] == geoms.CAPSULE else 0.0)
            ends.append((centre - half, 2 * half))
            frames.append((body_jacobian(model, q, body) if body >= 0 else np.zeros((6, model.nv)), xpos))
            radius.append(G.geom_size[geom, 0])
        (a0, d1), (b0, d2) = ends
        jacobians, origins = np.stack([J for J, _ in frames]), np.stack([o for _, o in frames])
        arrays = (jacobians, origins, a0, d1, b0, d2, np.array(radius, float), float(contacts.dist[c]))
        pair = native.segment_pair(*arrays) if COMPILED_PIECES and native.on else segment_pair(*arrays)
        if pair is None:
            return None
        room, speed, st, dD, L, v1 = pair
        return _SegmentPair(room, speed, st, dD, (d1, d2), jacobians, origins, radius, L, v1)

    def _segment_contact(self, c: int, pair) -> tuple | None:
        """(rows (k,), dJ (k, nv, nv), dpos (k, nv)) of contact c when it is one between two spheres or capsules whose
        nearest points are one pair (pair: _segment_pair's, or None), of dim 1 or 3 on the pyramidal cone; else None.
        With the weights' derivatives (ds, dt) and dD (_segment_pair), n = D / |D|: dn = (1 - n n^T) dD / |D|, d dist =
        n . dD, the contact p = c1 + n (r1 + dist / 2): dp = v1 + d1 ds + dn (r1 + dist / 2) + n d dist / 2; the rows
        J = E (Jp2(p) - Jp1(p)) (E: n, n +- mu t with make_frame's tangents from n, turning with it; the dofs moving
        both bodies skipped) give dJ as _plane_contacts' for each body, plus dE Jd."""
        model, r, contacts = self.model, self.r, self.contacts[0]
        first, dim = int(r.contact_row[c]), int(r.contact_dim[c])
        if pair is None or not (r.type[first] in (constraint.CONTACT_FRICTIONLESS, constraint.CONTACT_PYRAMIDAL)
                                and dim in (1, 3) and r.R[first] > R_FLOOR):
            return None
        b1, b2 = r.contact_body[c].tolist()
        common = _body_dofs(model)[b1] & _body_dofs(model)[b2]         # the dofs moving both bodies (dof_chain's)
        arrays = (pair.jacobians, pair.origins, contacts.frame[c], contacts.pos[c], float(contacts.dist[c]),
                  contacts.friction[c], dim, pair.axes[0], pair.rates[0], pair.dD, float(pair.L),
                  np.array(pair.radius, float), pair.v1, model.dof_turns, common.astype(np.float64))
        if COMPILED_PIECES and native.on:
            dJ, ddist = native.segment_contact_rows(*arrays)
        else:
            dJ, ddist = segment_contact_rows(*arrays)
        return np.arange(first, first + len(dJ)), dJ, np.repeat(ddist[None], len(dJ), axis=0)

    def _anchor_rows(self, q: np.ndarray, qd: np.ndarray) -> tuple:
        """(rows (n,), dJ (n, nv, nv), dbias (n, nv), dgap (n, nv)): the optimum's connect and weld rows, d J[row, j]/dq_k
        at [., j, k] (anchor_rows, compiled where COMPILED_PIECES: native.anchor_rows), d(Jdot qd)/dq (MuJoCo 4's aref
        term: anchor_bias_derivative, compiled where COMPILED_PIECES) and the q-derivative of the position their impedance
        takes, the block's |pos| (pos . J / |pos|: dpos = J, the anchors' and the weld's quaternion error's), for their
        forces' q-derivative analytic (_analytic_forces) as the plane contacts' and limits': no dof is differenced for
        them. Before (dJ alone analytic, the forces differenced at the points along every dof) each engine's rounding of
        jar at the points, over ROW_STEP, put the engines 1.4e-10 to 4.6e-10 of A apart on scenes whose connects and
        welds are violated by 0.4-0.6 m (4e3 N), 1.0e-10 to 8.5e-10 on the tests' VIOLATED_EQUALITIES (2e-14 to 3e-14
        now). None (n = 0) with ANALYTIC_ROWS False or at the discrete step's end
        (its rows all differenced, NumPy's alone), and an equality whose R is at its floor MINVAL (D not imp's: left to
        the differences)."""
        model, r, nv = self.model, self.r, self.model.nv
        first = [i for i in range(r.ne) if model.eq_type[r.id[i]] in (CONNECT, WELD) and (i == 0 or r.id[i - 1] != r.id[i])
                 and r.R[i:i + (6 if model.eq_type[r.id[i]] == WELD else 3)].min() > R_FLOOR]   # R at its floor: differenced
        if not ANALYTIC_ROWS or self.discrete is not None or not first:
            return np.zeros(0, np.intp), np.zeros((0, nv, nv)), np.zeros((0, nv)), np.zeros((0, nv))
        xpos, xmat = body_poses(model, q)
        rows, dJ, dbias, dgap = [], [], [], []
        for i in first:
            e = r.id[i]
            weld, data = model.eq_type[e] == WELD, model.eq_data[e]
            bodies, anchors = (model.eq_obj1id[e], model.eq_obj2id[e]), (data[3:6], data[0:3]) if weld else (data[0:3], data[3:6])
            J, origin, anchor, R = np.zeros((2, 6, nv)), np.zeros((2, 3)), np.zeros((2, 3)), np.tile(np.eye(3), (2, 1, 1))
            for k, (b, a) in enumerate(zip(bodies, anchors)):
                if b >= 0:
                    J[k], origin[k], R[k] = body_jacobian(model, q, b), xpos[b], xmat[b]
                anchor[k] = R[k] @ a + origin[k]
            quats = np.array([mat_to_quat(R[1]) * [1.0, -1.0, -1.0, -1.0], quat_mul(mat_to_quat(R[0]), data[6:10])])
            if weld and self._turned_sign(quats, J, float(data[10]), r.J[i + 3:i + 6]) < 0:
                quats[1] = -quats[1]                   # xquat's sign as the rows' (q and -q: one rotation)
            arrays = (J, origin, anchor, model.dof_turns, quats, float(data[10]), 6 if weld else 3)
            dJ.append(native.anchor_rows(*arrays) if COMPILED_PIECES and native.on else anchor_rows(*arrays))
            dbias.append(native.anchor_bias_derivative(*arrays, qd) if COMPILED_PIECES and native.on
                         else anchor_bias_derivative(*arrays, qd))
            rows.append(np.arange(i, i + len(dJ[-1])))
            pos = r.pos[rows[-1]]                      # the impedance's |pos| moves by pos . dpos / |pos|, dpos = J
            norm = np.sqrt(pos @ pos)
            dgap.append(np.repeat((pos @ r.J[rows[-1]] / norm if norm > 0 else np.zeros(nv))[None], len(pos), axis=0))
        return (np.concatenate(rows).astype(np.intp), np.concatenate(dJ), np.concatenate(dbias), np.concatenate(dgap))

    @staticmethod
    def _turned_sign(quats: np.ndarray, J: np.ndarray, scale: float, Jr: np.ndarray) -> float:
        """+-1 (0 where they vanish): whether a weld's rotational rows Jr (3, nv), ts/2 Im(neg (0, w_j) quat) (w = W1 -
        W2 from the bodies' J (2, 6, nv), scale = ts), were built with quats' (neg, quat) (2, 4) or with one of them
        negated (the same rotations)."""
        w = np.vstack([np.zeros(J.shape[2]), J[0, 3:] - J[1, 3:]]).T                # (nv, 4): (0, w_j)
        mine = quat_mul(quat_mul(quats[0], w), quats[1])[:, 1:]
        return float(np.sign(np.sum(0.5 * scale * mine.T * Jr)))

    def _analytic_forces(self, rows: np.ndarray, dJ: np.ndarray, dpos: np.ndarray, qd: np.ndarray,
                         dgap: np.ndarray | None = None, dbias: np.ndarray | None = None) -> tuple:
        """dG/dq of the rows given (_analytic_rows, or the anchored connect and weld rows: _anchor_rows) as (-dJ^T f
        (nv, nv), df (len(rows), nv)), dG = -dJ^T f - J^T df kept apart for _hessian_solve, each row held in its state
        at the optimum a_c:

            G = -J^T f,   f = -D jar on a quadratic row (0 satisfied),   jar = J a_c - aref
            aref = -B J qd - K imp (pos - margin) - bias:   d aref = -B dJ qd - K imp dpos - K impP (pos - margin) dgap
                                                                     - dbias
            D = imp / (c (1 - imp)):                        dD = D impP / (imp (1 - imp)) dgap
            dG = -dJ^T f - J^T df,   df = -dD jar - D (dJ a_c - d aref) on a quadratic row

        (impP = d imp / d gap, engine.constraint.impedance, at the position gap its impedance takes: the row's pos,
        dgap = dpos where not given, a connect's or weld's |pos| over its rows; bias: MuJoCo 4's Jdot qd on connect and
        weld rows, zero where dbias is not given; K, B and c, diagApprox and the pyramid's 2 mu^2, constant)."""
        r, a = self.r, self.a
        if not rows.size:
            return np.zeros((self.model.nv, self.model.nv)), np.zeros((0, self.model.nv))
        dgap = dpos if dgap is None else dgap
        J, D, imp, impP = r.J[rows], r.D[rows], r.imp[rows], r.impP[rows]
        jar = J @ a - r.aref[rows]
        quadratic = self.state[rows] == constraint.QUADRATIC
        f = np.where(quadratic, self._optimum_forces()[rows], 0.0)
        daref = -r.B[rows, None] * (qd @ dJ) - (r.K[rows] * imp)[:, None] * dpos \
            - (r.K[rows] * impP * (r.pos[rows] - r.margin[rows]))[:, None] * dgap      # qd @ dJ: dJ qd by row
        if dbias is not None:
            daref -= dbias
        dD = (D * impP / (imp * (1 - imp)))[:, None] * dgap
        df = np.where(quadratic[:, None], -dD * jar[:, None] - D[:, None] * (a @ dJ - daref), 0.0)
        return _turning(f, dJ), df

    def derivatives(self, q, qd, rq, rv, Fu, Fa):
        """(dqfrc_constraint/dq, /dqd, /dctrl, /dact) from r_q, r_qd (nv, nv), df/dctrl (nv, nu), df/dact (nv, na)
        (see the class): held at solve()'s optimum, from the rows' q-derivatives (terms). Mirrored by
        cpp/step_derivative.h's constrained_derivatives (_compiled_constrained), which stops at da: its acceleration
        folds M da - r into K's solve (K^-1 M da = da - K^-1 (K - M) da)."""
        t, r, M, nv = self.terms(q, qd), self.r, self.M, self.model.nv
        H = M + r.J.T @ self._times_S(r.J)
        Gq, Wq = np.zeros((nv, nv)), np.zeros((r.nefc, nv))     # G_q = Gq - J^T Wq (Wq: the rows' force derivatives)
        if t.moving.size:
            Gq[:, t.moving], Wq[:, t.moving] = self._product_rule(t.J, t.force, _FD_POINT_WEIGHTS, t.moving.size)
        turning, df = self._analytic_forces(t.rows, t.dJ, t.dpos, qd)
        Gq += turning
        Wq[t.rows] += df
        turning, df = self._analytic_forces(t.anchored, t.anchor_dJ, self.r.J[t.anchored], qd, t.anchor_dgap,
                                            t.anchor_dbias)
        Gq += turning
        Wq[t.anchored] += df
        Wv = self._times_S(t.daref)                    # G_qd = -J^T S daref/dqd
        W = np.hstack([Wq, Wv, np.zeros((r.nefc, Fu.shape[1] + Fa.shape[1]))])
        da = self._hessian_solve(H, np.hstack([rq - Gq, rv, Fu, Fa]), W)
        out = M @ da - np.hstack([rq, rv, Fu, Fa])
        return np.split(out, np.cumsum([nv, nv, Fu.shape[1]]), axis=1)

    def terms(self, q: np.ndarray, qd: np.ndarray) -> "_Terms":
        """The rows' derivatives at solve()'s optimum that derivatives() combines (_Terms): the refusals first
        (InvalidStateError where the step is not differentiable), then the analytic rows' dJ and dpos (_analytic_rows;
        the plane contacts' left to the compiled step where self.step_planes),
        the differenced rows' J and forces at the points along each dof that moves one (_points, _held_forces: where a
        contact appears along the others, refused; detected there only along those _proven_still cannot clear) and
        daref/dqd (_aref_velocity_derivative)."""
        r, nv, model = self.r, self.model.nv, self.model
        self.pairs, poses = {}, None
        if len(r.contact_row):                         # the contacts' refusals (without contacts, nothing to refuse)
            poses = body_poses(model, q)               # the bodies' (xpos, xmat), once
            self.pairs = self._segment_pairs(q, poses)     # InvalidStateError where a nearest point nears its end
            self._refuse_upright_capsules(q, poses)        # InvalidStateError where a capsule on a plane nears upright
            self._refuse_flat_cylinders(q, poses)          # InvalidStateError where a cylinder on a plane nears flat
            self._refuse_cylinders_on_faces(q, poses)      # InvalidStateError where a cylinder on a face's contacts jump
            self._refuse_frame_switches()                  # InvalidStateError where make_frame's default tangent switches
        self._refuse_impedance_kinks()                 # InvalidStateError where a power-1 impedance nears its kink
        rows, dJ, dpos, planes = self._analytic_rows(q, poses)
        self.analytic = rows
        self.anchored, anchor_dJ, anchor_dbias, anchor_dgap = self._anchor_rows(q, qd)
        # G at q moved by s ROW_STEP along each tangent direction that moves a row, all rows built in one call
        moves = self._moving_dofs(q)
        moving, still = np.flatnonzero(moves), np.flatnonzero(~moves)
        if not collision.has_contacts(model):          # along the others, no contact may appear either: checked there
            still = still[:0]                          # (those that move a pair of geoms that may touch)
        still = still[collision.contact_dofs(model)[still]] if still.size else still
        if still.size and not moving.size and self._checks_compiled():   # proven, or detected and held, in one call
            still = self._checked_still(still, body_poses(model, q) if poses is None else poses, q)
        elif still.size:                               # those along which no contact can switch: not detected
            still = still[~self._proven_still(still, body_poses(model, q) if poses is None else poses)]
        J, force = np.zeros((0, r.nefc, nv)), np.zeros((0, r.nefc))
        if moving.size or still.size:
            Q, dofs = self._points(q, moving, still)
            J, force = self._held_forces(Q, np.repeat(qd[None], len(Q), axis=0), dofs, 2 * still.size)
        return _Terms(rows, dJ, dpos, moving, J, force, self._aref_velocity_derivative(q, qd, anchor_dJ), planes,
                      self.anchored, anchor_dJ, anchor_dbias, anchor_dgap)

    def compiled_terms(self, t: "_Terms", qfrc: np.ndarray) -> dict:
        """The constrained terms of cpp/data.h's ConstrainedTerms by name (read in place by cpp/bindings.cpp) from terms()'
        t and solve()'s optimum (qfrc: its qfrc_constraint): the rows, their states and forces (_optimum_forces), the
        cones' Hessians concatenated, FD_WEIGHTS' weights over 12 ROW_STEP (_product_rule's), and the plane contacts
        whose rows' terms the compiled step takes (t.planes: _plane_arrays' arrays, plane_at the first of their
        rows among t.rows; none where t.planes is None), and the anchored rows' dJ (t.anchored, t.anchor_dJ)."""
        r, cones = self.r, list(self.cones.items())
        at, count, bodies, (origin, frame, pos, dist, friction, radius, dim, axis) = t.planes or _NO_PLANES
        floats = dict(a_c=self.a, qfrc=qfrc, J=r.J, D=r.D, aref=r.aref, B=r.B, K=r.K, imp=r.imp, impP=r.impP, pos=r.pos,
                      margin=r.margin, force=self._optimum_forces(), dJ=t.dJ, dpos=t.dpos, Jpts=t.J, fpts=t.force,
                      daref=t.daref, weights=_FD_POINT_WEIGHTS,
                      cone_H=np.concatenate([H.ravel() for _, H in cones]) if cones else np.zeros(0),
                      plane_origin=origin, plane_frame=frame, plane_pos=pos, plane_dist=dist, plane_friction=friction,
                      plane_radius=radius, plane_axis=axis, turns=self.model.dof_turns if count else _no_turns(self.model),
                      anchor_dJ=t.anchor_dJ, anchor_dbias=t.anchor_dbias, anchor_dgap=t.anchor_dgap)
        ints = dict(state=self.state, rows=t.rows, moving=t.moving, cone_first=[first for first, _ in cones],
                    cone_dim=[len(H) for _, H in cones], plane_body=bodies, plane_dim=dim, anchored=t.anchored)
        return {"nefc": int(r.nefc), "nrows": len(t.rows), "nmoving": len(t.moving), "points": len(FD_WEIGHTS),
                "ncone": len(cones), "stiff": bool(self.stiff), "step": 12 * ROW_STEP, "nplane": len(bodies),
                "plane_at": int(at), "plane_rows": int(count), "nanchor": len(t.anchored),
                **{k: np.ascontiguousarray(v, dtype=np.float64) for k, v in floats.items()},
                **{k: np.ascontiguousarray(v, dtype=np.int64) for k, v in ints.items()}}

    def _hessian_solve(self, H: np.ndarray, B: np.ndarray, W: np.ndarray) -> np.ndarray:
        """H^-1 (B + J^T W) (nv, k) for B (nv, k) and the rows' W (nefc, k). With stiff rows (STIFF_ROWS; S = D on the
        quadratic rows Q, W zero on the others) in the range space of Q's rows,
        M^-1 (B - J_Q^T (R_Q + J_Q M^-1 J_Q^T)^-1 (J_Q M^-1 B - W_Q / D_Q)), never forming J^T D J nor J^T W: D ~ 1e11
        (a pyramid at friction 1e-5, D = 1 / (2 mu^2 R)) would round M's entries and the soft directions' parts of
        J^T W at eps D (5e-6 of A, issue U); otherwise, or with a cone's block (elliptic), the full H.
        InvalidStateError for a singular matrix."""
        r, M = self.r, self.M
        quadratic = self.state == constraint.QUADRATIC
        try:
            if not self.stiff or self.cones or np.any(W[~quadratic]):
                return np.linalg.solve(H, B + r.J.T @ W)
            JQ = r.J[quadratic]
            MiB, MiJ = np.linalg.solve(M, B), np.linalg.solve(M, JQ.T)
            K = np.diag(1.0 / r.D[quadratic]) + JQ @ MiJ
            return MiB - MiJ @ np.linalg.solve(K, JQ @ MiB - W[quadratic] / r.D[quadratic, None])
        except np.linalg.LinAlgError:
            raise InvalidStateError("step_derivatives(constraints=True): the solver's Hessian M + J^T S J is singular "
                                    "at this state (a body without mass or inertia?); expected a positive definite "
                                    "mass matrix") from None

    def _optimum_forces(self) -> np.ndarray:
        """(nefc,) the rows' forces at the optimum: update's at jar = J a_c - aref (solve()'s, each row in its state),
        the quadratic rows' then, where stiff (STIFF_ROWS), corrected by least squares to J^T force = M a_c - f (the
        optimum's balance). -D jar alone keeps jar's rounding (eps |aref|) times D: 1e-4 of the force where D ~ 1e11 (a
        pyramid at friction 1e-5: D = 1 / (2 mu^2 R)); a_c holds it."""
        r = self.r
        if self.forces is None:
            self.forces = self.efc_force.copy()
            if self.stiff:
                quadratic = np.flatnonzero(self.state == constraint.QUADRATIC)
                residual = self.M @ self.a - self.f - constraint.rows_transpose_times(r, self.forces)
                self.forces[quadratic] += np.linalg.lstsq(r.J[quadratic].T, residual, rcond=None)[0]
        return self.forces.copy()

    def _product_rule(self, J: np.ndarray, force: np.ndarray, weights: np.ndarray, k: int) -> tuple:
        """dG/dq along k dofs from the rows (J (k s, nefc, nv), force (k s, nefc)) at s points each (FD_WEIGHTS) as
        (-dJ^T f (nv, k), df (nefc, k)), dG = -dJ^T f - J^T df (the product's rule; J^T df left to _hessian_solve), f
        at the optimum (_optimum_forces; the analytic and anchored rows zero: _analytic_forces, _anchor_rows).
        Differencing G = -J^T f itself instead keeps J's change times f's rounding (D eps |aref| on a quadratic row):
        1e-5 of A on a frictionless pyramid, D ~ 1 / (2 mu^2 R) with mu clamped to 1e-5 (issue U)."""
        r, step = self.r, 12 * ROW_STEP
        f = self._optimum_forces()
        f[self.analytic] = f[self.anchored] = 0.0
        dJ = np.einsum("ksrv,s->krv", J.reshape(k, len(weights), r.nefc, r.J.shape[1]), weights) / step
        df = np.einsum("ksr,s->kr", force.reshape(k, len(weights), r.nefc), weights) / step
        return -np.einsum("krv,r->vk", dJ, f), df.T


#: _cylinders_on_faces' geom type pairs: a cylinder and a box or a mesh, either way round
_CYLINDER_FACES = frozenset({(geoms.CYLINDER, geoms.BOX), (geoms.BOX, geoms.CYLINDER), (geoms.CYLINDER, geoms.MESH),
                             (geoms.MESH, geoms.CYLINDER)})
#: compiled_terms' plane contacts where none is made in the compiled step: (at, count, bodies, their arrays), all empty
_NO_PLANES = (0, 0, np.zeros(0), (np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 5)),
                                  np.zeros(0), np.zeros(0), np.zeros((0, 3))))
#: FD_WEIGHTS' weights (_product_rule's, compiled_terms')
_FD_POINT_WEIGHTS = np.array(FD_WEIGHTS)[:, 1]
#: _points' offsets along a differenced dof (FD_WEIGHTS' steps times ROW_STEP) and along a checked one
_POINT_OFFSETS = np.array(FD_WEIGHTS)[:, 0] * ROW_STEP
_CHECK_OFFSETS = np.array([-2 * ROW_STEP, 2 * ROW_STEP])
for _array in (_NO_PLANES[2], *_NO_PLANES[3], _FD_POINT_WEIGHTS, _POINT_OFFSETS, _CHECK_OFFSETS):   # read-only constants
    _array.setflags(write=False)
del _array


def _front(model: Model, x) -> tuple:
    """solver.compiled_forward's front of the step inputs x (StepInputs: no xfrc_applied): (the compiled actuators, ctrl
    (1, nu), qfrc_applied (1, nv) or None)."""
    acts = x.actuators
    ctrl = None if acts is None else np.ascontiguousarray(x.ctrl, dtype=np.float64)[None]
    applied = None if x.qfrc_applied is None else np.ascontiguousarray(x.qfrc_applied, dtype=np.float64)[None]
    return native.compiled_actuators(model, acts), ctrl, applied


@per_model
def _no_turns(model: Model) -> np.ndarray:
    """(nv, nv) zeros: compiled_terms' turns without plane contacts (made once per model)."""
    out = np.zeros((model.nv, model.nv))
    out.setflags(write=False)
    return out


def _unconverged(opt, iterations: int) -> str:
    """The ConvergenceWarning's text for a solve that did not meet its tolerance after `iterations` (the largest over
    its islands). Newton and CG (both engines, as MuJoCo's mj_solPrimal) stop at the tolerance, at opt.iterations, or
    when the line search finds no lower cost along the search direction (alpha = 0: MuJoCo's PrimalSearch status 5,
    no improvement), before either; PGS stops at the tolerance or opt.iterations only."""
    head = f"step_derivatives(constraints=True): the {opt.solver} solver stopped "
    tail = ": the derivatives are those of the optimum's conditions at its last iterate"
    if iterations >= opt.iterations or opt.solver == "pgs":
        return (f"{head}at its iteration limit ({opt.iterations}) before its tolerance ({opt.tolerance:g}){tail}; raise "
                "model.opt.iterations")
    return (f"{head}after {iterations} of its {opt.iterations} iterations, before its tolerance ({opt.tolerance:g}): "
            "its line search found no lower cost along the search direction (the cost at its rounding, as with tolerance "
            f"0, or the line search short of evaluations: opt.ls_iterations {opt.ls_iterations}){tail}")


class _SegmentPair(NamedTuple):
    """_Constraints._segment_pair's: a contact between two spheres or capsules at its segments' nearest points."""
    room: np.ndarray           # (2,) how far s, t are from changing regime (free: min(w, 1 - w); clamped: its
                               # multiplier [m^2]; inf on a sphere)
    speed: np.ndarray          # (2,) the largest rate of room's quantity along a tangent direction
    rates: np.ndarray          # (2, nv) (ds, dt) along each tangent direction (zero where clamped)
    dD: np.ndarray             # (3, nv) d(c2 - c1)
    axes: tuple                # (d1, d2) (3,) each [m]
    jacobians: np.ndarray      # (2, 6, nv) bodies 1's and 2's J at their origins (_point_jacobian)
    origins: np.ndarray        # (2, 3) those origins
    radius: list               # [r1, r2] [m]
    L: float                   # |c2 - c1| [m]
    v1: np.ndarray             # (3, nv) body 1's point Jacobian at c1


class _Terms(NamedTuple):
    """_Constraints.terms': the rows' derivatives at the optimum that derivatives() combines."""
    rows: np.ndarray           # (m,) the rows whose dG/dq is analytic (_analytic_rows)
    dJ: np.ndarray             # (m, nv, nv) their d J[row, j]/dq_k at [., j, k]
    dpos: np.ndarray           # (m, nv) their d pos/dq
    moving: np.ndarray         # (k,) the dofs along which the other rows are differenced (_moving_dofs)
    J: np.ndarray              # (k s, nefc, nv) the rows' J at FD_WEIGHTS' s points along each (_held_forces)
    force: np.ndarray          # (k s, nefc) their forces there (the analytic rows' zero)
    daref: np.ndarray          # (nefc, nv) d aref/dqd (_aref_velocity_derivative)
    planes: tuple | None       # the plane contacts left to the compiled step (_analytic_rows' planes), or None
    anchored: np.ndarray       # (n,) the connect and weld rows, analytic (_anchor_rows, _analytic_forces)
    anchor_dJ: np.ndarray      # (n, nv, nv) their d J[row, j]/dq_k at [., j, k]
    anchor_dbias: np.ndarray   # (n, nv) their d(Jdot qd)/dq (anchor_bias_derivative)
    anchor_dgap: np.ndarray    # (n, nv) the q-derivative of the position their impedance takes, |pos| of the block


def plane_contact_rows(J6, origin, frame, pos, dist, friction, radius, dim, axis, turns) -> tuple:
    """(dJ (m, nv, nv), ddist (m, nv)) of the rows of nc contacts of a plane on no moving body (geom 1) against a body's
    sphere, capsule or box (_Constraints._plane_contacts, which gathers: J6 (nc, 6, nv) the body's Jacobian at its
    origin (nc, 3), the contacts' frame (nc, 3, 3), pos (nc, 3), dist (nc,), friction (nc, >= dim - 1), radius (nc,:
    0 for a box), dim (nc,: 1 or 3), axis (nc, 3: a capsule's, zero otherwise), turns (nv, nv): Model.dof_turns, [j, k]),
    each contact's rows (_pyramid_edges) in turn, d J[row, j]/dq_k at [., j, k]; the equations are _plane_contacts'.
    Mirrored one to one by cpp/constraint_derivative.h's plane_contact_rows (COMPILED_PIECES)."""
    W = J6[:, 3:]                                                               # (nc, 3, nv)
    n = frame[:, 0]
    x = pos + n * (radius + dist / 2)[:, None]
    P = J6[:, :3] + _cross_columns(W, pos - origin)                             # Jp(b, p) = Jp(b, o) + W x (p - o)
    X = P + _cross_columns(W, x - pos)
    ddist = np.einsum("cx,cxk->ck", n, X)
    dp = X - n[:, :, None] * ddist[:, None, :] / 2
    E = [_pyramid_edges(frame[i], friction[i], int(dim[i])) for i in range(len(dim))]
    owner = np.repeat(np.arange(len(dim)), [len(e) for e in E])
    dJ = _rows_on_point(np.concatenate(E), P[owner], W[owner], dp[owner], turns)
    start = 0
    for i, e in enumerate(E):
        if dim[i] > 1 and axis[i].any():               # a capsule's tangents turn with its axis
            n_i, t1, a = frame[i, 0], frame[i, 1], axis[i]
            y = a - n_i * (n_i @ a)
            da = -skew(a) @ W[i]                                                # (3, nv): W_k x a
            dt1 = _unit_derivative(t1, da - np.outer(n_i, n_i @ da), np.sqrt(y @ y))
            dE = _pyramid_edges(np.array([np.zeros_like(dt1), dt1, skew(n_i) @ dt1]), friction[i], int(dim[i]))
            dJ[start:start + len(dE)] += np.matmul(P[i].T, dE)
        start += len(e)
    return dJ, ddist[owner]


def segment_pair(J, origin, a0, d1, b0, d2, radius, dist) -> tuple | None:
    """(room (2,), speed (2,), st (2, nv), dD (3, nv), L, v1 (3, nv)) of a contact between two spheres or capsules at
    their segments' nearest points (_Constraints._segment_pair, which gathers: J (2, 6, nv) the bodies' Jacobians at
    their origins (2, 3), zeros for the world; each segment a0 + s d1, b0 + t d2 [m]; radius (2,); the contact's dist),
    _SegmentPair's fields; None where the segments are parallel (two contacts) or the contact is not at their nearest
    points. The nearest points c1 = a0 + s d1, c2 = b0 + t d2 (primitives.segment_weights) have D = c2 - c1 normal to
    d1 where s is inside (0, 1), to d2 where t is, so along dof k (v1, v2: the bodies' velocities at c1, c2; dd = W_k x d):

        dD = v2 - v1 + d2 dt - d1 ds,   dD . d1 + D . dd1 = 0 (s inside),   dD . d2 + D . dd2 = 0 (t inside)

    (ds, dt zero at an end). Mirrored one to one by cpp/constraint_derivative.h's segment_pair (COMPILED_PIECES)."""
    weights = primitives.segment_weights(a0, a0 + d1, b0, b0 + d2)
    if len(weights) != 1:                                                   # parallel: two contacts, differenced
        return None
    s, t = weights[0]
    c1, c2 = a0 + s * d1, b0 + t * d2
    D = c2 - c1
    L = np.sqrt(D @ D)
    if L < 1e-9 or abs(L - radius[0] - radius[1] - dist) > 1e-9 * max(1.0, L):   # not its nearest points
        return None
    (v1, W1), (v2, W2) = _point_jacobian((J[0], origin[0]), c1), _point_jacobian((J[1], origin[1]), c2)
    free = np.array([(0 < s < 1) and d1 @ d1 > 0, (0 < t < 1) and d2 @ d2 > 0])
    dd1, dd2 = _cross_columns(W1, d1), _cross_columns(W2, d2)
    A = np.array([[-(d1 @ d1), d2 @ d1], [-(d1 @ d2), d2 @ d2]])
    rhs = -np.array([(v2 - v1).T @ d1 + D @ dd1, (v2 - v1).T @ d2 + D @ dd2])
    st = np.zeros((2, J.shape[2]))
    if free.any():
        f = np.flatnonzero(free)
        st[f] = np.linalg.solve(A[np.ix_(f, f)], rhs[f])
    dD = v2 - v1 + np.outer(d2, st[1]) - np.outer(d1, st[0])
    # a clamped weight's multiplier |D . d| (s: -D . d1 >= 0 at 0, D . d1 >= 0 at 1; t: D . d2 at 0, -D . d2 at 1),
    # zero where it comes free: its rate dD . d + D . dd; a free one's way to an end, min(w, 1 - w), at rate dw
    weights, clamped = np.array([s, t]), np.array([D @ d1, D @ d2]) * np.array([2 * s - 1, 1 - 2 * t])
    room = np.where(free, np.minimum(weights, 1 - weights), clamped)
    rates = np.where(free[:, None], st, np.array([dD.T @ d1 + D @ dd1, dD.T @ d2 + D @ dd2]))
    room[np.array([d1 @ d1 == 0, d2 @ d2 == 0])] = np.inf                           # a sphere: no segment
    return room, np.abs(rates).max(axis=1), st, dD, L, v1


def segment_contact_rows(J, origin, frame, pos, dist, friction, dim, d1, ds, dD, L, radius, v1, turns, common) -> tuple:
    """(dJ (rows, nv, nv), ddist (nv,)) of the rows of a contact between two spheres or capsules at their segments'
    nearest points, of dim 1 or 3 on the pyramidal cone (_Constraints._segment_contact, which gathers: J (2, 6, nv) the
    bodies' Jacobians at their origins (2, 3), zeros for the world; the contact's frame (3, 3), pos (3,), dist,
    friction; from _segment_pair: d1 (3,), ds (nv,) s's rates, dD (3, nv) d(c2 - c1), L = |c2 - c1|, radius (2,),
    v1 (3, nv) body 1's point Jacobian at c1; turns (nv, nv): Model.dof_turns, [j, k]; common (nv,): nonzero on the dofs
    moving both bodies, skipped), d J[row, j]/dq_k at [., j, k]; the equations are _segment_contact's. Mirrored one
    to one by cpp/constraint_derivative.h's segment_contact_rows (COMPILED_PIECES)."""
    n, mu = frame[0], friction
    dn = _unit_derivative(n, dD, L)
    ddist = n @ dD
    dp = v1 + np.outer(d1, ds) + dn * (radius[0] + dist / 2) + np.outer(n, ddist / 2)
    dframe = [dn]
    if dim > 1:                                        # the frame: make_frame(n, 0): t1 = y / |y|, y = y0 - n (n . y0)
        y0 = tangent_axis(n)
        y = y0 - n * (n @ y0)
        dt1 = _unit_derivative(frame[1], -(dn * (n @ y0) + np.outer(n, y0 @ dn)), np.sqrt(y @ y))
        dframe += [dt1, _cross_columns(dn, frame[1]) + skew(n) @ dt1]      # dt2 = dn x t1 + n x dt1
    E, dE = _pyramid_edges(frame, mu, dim), _pyramid_edges(np.array(dframe), mu, dim)
    Jd, dJ = np.zeros((3, len(ds))), np.zeros((len(E), len(ds), len(ds)))
    for sign, k in ((-1.0, 0), (1.0, 1)):                                   # Jd = Jp2(p) - Jp1(p)
        P, W = _point_jacobian((J[k], origin[k]), pos)
        dJ += sign * _rows_on_point(E, P, W, dp, turns)
        Jd += sign * P
    dJ += np.einsum("rxk,xj->rjk", dE, Jd)
    dJ[:, common != 0] = 0.0
    return dJ, ddist


def anchor_rows(J, origin, anchor, turns, quats, scale, rows) -> np.ndarray:
    """(rows, nv, nv) d J[row, j]/dq_k at [., j, k] of a connect's rows (rows 3) or a weld's (rows 6) between bodies 1
    and 2 (_Constraints._anchor_rows, which gathers: J (2, 6, nv) the bodies' Jacobians at their origins (2, 3), zeros
    for the world; anchor (2, 3) [m] the anchors in the world, each fixed in its body; turns (nv, nv): Model.dof_turns,
    [j, k]; a weld's quats (2, 4): (neg, quat) = (conj(xquat_2), xquat_1 relpose) and scale its torquescale, ignored for
    a connect). The translational rows J = Jp1(x1) - Jp2(x2) (engine.constraint's _equality_rows): x fixed in its
    body moves by Jp(x), so each anchor's part is _rows_on_point's with e the world's axes and dp = Jp(x). A weld's
    rotational rows J_j = ts/2 Im(neg (0, w_j) quat), w = W1 - W2, whose quaternions turn with their bodies (d xquat =
    (0, W_k) xquat / 2) and whose columns with the dofs turning them (d W_j = W_k x W_j where k turns j):

        d J_j/dq_k = ts/2 Im(neg X quat),   X = ((W2_k - W1_k) . w_j / 2,  w_j x (W1_k + W2_k) / 2 + d w_j)

    Mirrored one to one by cpp/constraint_derivative.h's anchor_rows (COMPILED_PIECES)."""
    W = J[:, 3:]                                                            # (2, 3, nv)
    P = J[:, :3] + _cross_columns(W, anchor - origin)                       # the anchors' Jacobians Jp(x)
    nv, E = J.shape[2], np.eye(3)
    dJ = np.zeros((rows, nv, nv))
    dJ[:3] = _rows_on_point(E, P[0], W[0], P[0], turns) - _rows_on_point(E, P[1], W[1], P[1], turns)
    if rows == 3:
        return dJ
    w, Wt = W[0] - W[1], np.swapaxes(W, 1, 2)                               # Wt (2, nv, 3): W_k at [., k]
    cross = lambda a, b: np.cross(a[None, :, :], b[:, None, :])           # noqa: E731  [j, k] = a_k x b_j
    dw = turns[..., None] * (cross(Wt[0], Wt[0]) - cross(Wt[1], Wt[1]))     # (nv, nv, 3): W_k x W_j where k turns j
    X = np.empty((4, nv, nv))
    X[0] = 0.5 * (w.T @ (W[1] - W[0]))                                      # (W2_k - W1_k) . w_j / 2
    X[1:] = np.moveaxis(-0.5 * cross(Wt[0] + Wt[1], w.T) + dw, 2, 0)        # w_j x (W1_k + W2_k) / 2 + d w_j
    L = np.array([quat_mul(quat_mul(quats[0], e), quats[1])[1:] for e in np.eye(4)]).T     # X -> Im(neg X quat)
    dJ[3:] = 0.5 * scale * np.einsum("xi,ijk->xjk", L, X)
    return dJ


def anchor_bias_derivative(J, origin, anchor, turns, quats, scale, rows, qd) -> np.ndarray:
    """(rows, nv) d(Jdot qd)/dq_m at [., m] of a connect's rows (rows 3) or a weld's (rows 6) at the velocity qd (nv,)
    (anchor_rows' arrays): MuJoCo 4's aref term Jdot qd = sum_jk dJ[., j, k] qd_j qd_k (engine.constraint's jdot),
    from the first derivatives anchor_rows uses (each anchor's point Jacobian P, the angular W, dP = _rows_on_point's,
    dW_j = W_m x W_j where m turns j) differentiated once more. For each body, with omega = W qd, V = P qd and
    U_j = sum_k T[j, k] qd_k W_k, Pt_j likewise of P (T: turns):

        a = omega x V + sum_j qd_j (U_j x P_j - W_j x Pt_j)         (the anchor's Jdot qd)
        beta = sum_j qd_j U_j x W_j                                  (the body's angular Jdot qd)

    the translational rows' a_1 - a_2; a weld's rotational rows ts/2 Im(neg Y quat), Y = (-|w|^2 / 2, w x (omega_1 +
    omega_2) / 2 + beta_1 - beta_2), w = omega_1 - omega_2 (anchor_rows' X summed over qd twice), each factor
    differentiated along m: d neg = -neg (0, W2_m) / 2, d quat = (0, W1_m) quat / 2."""
    W = J[:, 3:]                                                            # (2, 3, nv)
    P = J[:, :3] + _cross_columns(W, anchor - origin)                       # the anchors' Jacobians Jp(x)
    nv, Tq, E = J.shape[2], turns * qd[None, :], _LEVI_CIVITA               # Tq[j, k] = T[j, k] qd_k
    dacc, omega, domega, dbeta, beta = [], [], [], [], []
    for Wb, Pb in zip(W, P):
        dP = _rows_on_point(np.eye(3), Pb, Wb, Pb, turns)                  # (3, nv, nv) [., j, m]
        dW = np.einsum("cab,am,bj,jm->cjm", E, Wb, Wb, turns)              # W_m x W_j where m turns j
        w, V, U, Pt, Wq = Wb @ qd, Pb @ qd, Wb @ Tq.T, Pb @ Tq.T, Wb * qd   # U[:, j] = sum_k T[j, k] qd_k W_k
        dw, dV = np.einsum("ijm,j->im", dW, qd), np.einsum("ijm,j->im", dP, qd)
        dU, dPt = np.einsum("jk,ikm->ijm", Tq, dW), np.einsum("jk,ikm->ijm", Tq, dP)
        dacc.append(np.einsum("cab,am,b->cm", E, dw, V) + np.einsum("cab,a,bm->cm", E, w, dV)
                    + np.einsum("cab,ajm,bj->cm", E, dU, Pb * qd) + np.einsum("cab,aj,bjm->cm", E, U * qd, dP)
                    - np.einsum("cab,ajm,bj->cm", E, dW, Pt * qd) - np.einsum("cab,aj,bjm->cm", E, Wq, dPt))
        dbeta.append(np.einsum("cab,ajm,bj->cm", E, dU, Wq) + np.einsum("cab,aj,bjm->cm", E, U * qd, dW))
        beta.append(np.einsum("cab,aj,bj->c", E, U, Wq))
        omega.append(w), domega.append(dw)
    out = np.zeros((rows, nv))
    out[:3] = dacc[0] - dacc[1]
    if rows == 3:
        return out
    w, dw, s, ds = omega[0] - omega[1], domega[0] - domega[1], omega[0] + omega[1], domega[0] + domega[1]
    Y = np.r_[-0.5 * (w @ w), 0.5 * np.einsum("cab,a,b->c", E, w, s) + beta[0] - beta[1]]
    dY = np.vstack([-(w @ dw), 0.5 * (np.einsum("cab,am,b->cm", E, dw, s) + np.einsum("cab,a,bm->cm", E, w, ds))
                    + dbeta[0] - dbeta[1]])                                 # (4, nv)
    neg, quat = quats
    axes = lambda Wb: np.hstack([np.zeros((nv, 1)), Wb.T])                 # noqa: E731  (nv, 4): (0, W_m)
    dneg, dquat = -0.5 * quat_mul(neg, axes(W[1])), 0.5 * quat_mul(axes(W[0]), quat)
    d = quat_mul(quat_mul(dneg, Y), quat) + quat_mul(quat_mul(neg, dY.T), quat) + quat_mul(quat_mul(neg, Y), dquat)
    out[3:] = 0.5 * scale * d[:, 1:].T
    return out


#: the Levi-Civita symbol: (a x b)_c = eps[c, a, b] a_a b_b
_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[0, 1, 2] = _LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = 1.0
_LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[1, 0, 2] = -1.0


def _turning(f: np.ndarray, dJ: np.ndarray) -> np.ndarray:
    """(nv, nv) -sum_r f_r dJ_r: -dJ^T f of rows' forces f (n,) and their Jacobians' q-derivatives dJ (n, nv, nv)."""
    return -np.einsum("r,rjk->jk", f, dJ)


def _pyramid_edges(frame: np.ndarray, mu: np.ndarray, dim: int) -> np.ndarray:
    """(max(1, 2 (dim - 1)), ...) a pyramidal contact's row directions in engine.constraint.rows' order: the normal
    frame[0] alone (dim 1), else frame[0] + sign mu_k frame[k], k = 1 .. dim - 1, sign +1 then -1; frame (>= dim, 3)
    or, the edges being linear in it, its derivative (>= dim, 3, nv); mu (>= dim - 1,) the friction coefficients."""
    if dim == 1:
        return frame[:1]
    return np.array([frame[0] + sign * mu[k - 1] * frame[k] for k in range(1, dim) for sign in (1.0, -1.0)])


def _unit_derivative(u: np.ndarray, dy: np.ndarray, norm: float) -> np.ndarray:
    """(3, nv) the derivative of u = y / |y| (3,) from dy (3, nv), norm |y|: (1 - u u^T) dy / |y|."""
    return (dy - np.outer(u, u @ dy)) / norm


def _rows_on_point(E: np.ndarray, P: np.ndarray, W: np.ndarray, dp: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """(m, nv, nv) d (e . Jp_j(p))/dq_k at [., j, k] of rows e (m, 3), held, on a body's point Jacobian P = Jp(b, p)
    with W its angular one ((m,) 3, nv each), p moving by dp ((m,) 3, nv) (_plane_contacts):

        (e x W_j) . dp_k + P_j . (e x W_k) - P_k . (e x W_j) (the last two where k turns j: turns (nv, nv) [j, k])"""
    EW = -_cross_columns(W, E)                                                  # (m, 3, nv): e x W_j
    turned = np.matmul(np.swapaxes(P, -1, -2), EW)                              # [., j, k]: P_j . (e x W_k)
    return np.matmul(EW.transpose(0, 2, 1), dp) + turns * (turned - turned.transpose(0, 2, 1))


def _point_jacobian(frame: tuple, x: np.ndarray) -> tuple:
    """(Jp(x) (3, nv), W (3, nv)) of a body at the world point x, frame (J (6, nv) at its origin, origin (3,)):
    Jp(x) = Jp(o) + W x (x - o)."""
    J, origin = frame
    return J[:3] + _cross_columns(J[3:], x - origin), J[3:]


def _cross_columns(W: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(..., 3, nv): each column of W (..., 3, nv) crossed with v (..., 3): W_k x v (componentwise: np.cross's axis
    moves cost more than the products here)."""
    x, y, z, a, b, c = W[..., 0, :], W[..., 1, :], W[..., 2, :], v[..., 0, None], v[..., 1, None], v[..., 2, None]
    out = np.empty(np.broadcast_shapes(W.shape, v.shape[:-1] + (3, 1)))
    out[..., 0, :], out[..., 1, :], out[..., 2, :] = y * c - z * b, z * a - x * c, x * b - y * a
    return out


def _geom_axis(model: Model, xmat: np.ndarray, geom: int) -> np.ndarray:
    """(3,) geom's z axis in the world, its body's orientation xmat (3, 3) times its own in the body (_geom_axes)."""
    return xmat @ _geom_axes(model)[geom]


@per_model
def _geom_axes(model: Model) -> np.ndarray:
    """(ngeom, 3) each geom's z axis in its body's frame, its quaternion's (w, x, y, z) third column (2 (xz + wy),
    2 (yz - wx), 1 - 2 (x^2 + y^2)) (_geom_axis' table, made once per model)."""
    w, x, y, z = model.geoms.geom_quat.reshape(-1, 4).T
    out = np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=1)
    out.setflags(write=False)
    return out


def held_forces(r, jar: np.ndarray, state: np.ndarray, D: np.ndarray) -> np.ndarray:
    """(n, nefc) the forces of rows laid out as r's (engine.constraint.Rows: types, ids, friction loss, contacts) at jar
    and D (n, nefc) each, every row in the state given (nefc,) (engine.constraint.update's formulas, the zone not
    decided again): quadratic -D jar, satisfied 0, friction loss +-frictionloss, an elliptic contact on its cone
    engine.constraint.cone_force."""
    force = np.where(state == constraint.QUADRATIC, -D * jar, 0.0)
    force = np.where(state == constraint.LINEARNEG, r.frictionloss, np.where(state == constraint.LINEARPOS, -r.frictionloss,
                                                                               force))
    for i in np.flatnonzero((state == constraint.CONE) & (r.type == constraint.CONTACT_ELLIPTIC)):
        if i > 0 and state[i - 1] == constraint.CONE and r.id[i - 1] == r.id[i]:
            continue                                   # not the contact's first row
        dim, mu, friction, U = constraint.elliptic_coordinates(r, i, jar)
        N, T = U[:, 0], np.sqrt((U[:, 1:] ** 2).sum(axis=1))
        force[:, i:i + dim] = constraint.cone_force(D[:, i], mu, friction, U, N, T)[0]
    return force


def switch_margins(r, jar: np.ndarray, state: np.ndarray) -> np.ndarray:
    """(2,): how far the rows r (engine.constraint.Rows) are from a switch, at jar = J qacc - aref in the states given:
    [0] the smallest distance of a row's jar from the edge of its state: a one-sided row's |jar|, a friction-loss
    row's from +-R frictionloss [m/s^2 | rad/s^2], an elliptic contact's from the cone's surfaces N = mu T and
    mu N + T = 0 in its scaled space (U = (mu jar_0, friction_j jar_j), over sqrt(1 + mu^2): jar times the friction
    coefficients), the smallest of these mixed units; [1] the smallest
    margin - pos of a contact or limit row [m | rad]: how far it is from leaving (a row appears at pos = margin too;
    rows not yet present, an approaching contact or limit, are not counted). inf where there is no such row."""
    edge = [np.inf]
    f = slice(r.ne, r.ne + r.nf)
    Rf = r.R[f] * r.frictionloss[f]
    edge += np.where(state[f] == constraint.QUADRATIC, np.minimum(jar[f] + Rf, Rf - jar[f]), np.abs(np.abs(jar[f]) - Rf)).tolist()
    rest = np.arange(r.ne + r.nf, r.nefc)
    elliptic = r.type[rest] == constraint.CONTACT_ELLIPTIC
    edge.append(np.abs(jar[rest[~elliptic]]).min(initial=np.inf))        # one-sided rows: |jar|
    first = rest[elliptic][r.contact_row[r.id[rest[elliptic]]] == rest[elliptic]]
    for i in first.tolist():                                              # each elliptic contact's first row
        dim, mu, _, U = constraint.elliptic_coordinates(r, i, jar)
        N, T = U[0], float(np.sqrt(U[1:] @ U[1:]))
        edge.append(min(abs(N - mu * T), abs(mu * N + T)) / np.sqrt(1 + mu * mu))
    limits = np.flatnonzero((r.type == constraint.LIMIT_JOINT) | (r.type == constraint.LIMIT_TENDON))
    first = np.r_[limits, r.contact_row[r.contact_row >= 0]].astype(np.intp)   # a contact's distance is its first row's
    leave = (r.margin - r.pos)[first]
    return np.array([min(edge), leave.min(initial=np.inf)])


def _gravcomp_derivative(model: Model, d: engine.Data) -> np.ndarray:
    """dG/dq (nv, nv) of the gravity compensation G (passive.gravcomp, times each dof's share gravcomp_passive +
    gravcomp_actuator), from a one-state Data with com_pos done. A body's constant world force F at its centre of mass
    p (relative to the tree's centre) gives tau_k = S_k . (p x F; F) over its chain's dofs k; a dof j of the chain moves
    p by w_j x p + v_j (S_j = (w_j; v_j)) and turns the S_k below it, so (with (S_j x S_k) . W = -S_k . (S_j x* W))
        k in the subtree of j:  d tau_k/dq_j = S_k . (p x G; G),  G = F x w_j
        k a strict ancestor:    d tau_k/dq_j = S_k^ang . ((w_j x p + v_j) x F)."""
    D = np.zeros((model.nv, model.nv))
    same = model.dof_linkid[:, None] == model.dof_linkid[None, :]
    below, above = model.dof_ancestor.T | same, model.dof_ancestor & ~same
    chains, forces_ = model.kept("link_dofchains"), passive.gravcomp_force(model)
    for b in np.flatnonzero(model.body_gravcomp).tolist():
        link = int(model.body_linkid[b])
        if link < 0:
            continue
        dofs, F = chains[link], forces_[b]
        p = passive.body_com(model, d, b)[:, 0]
        S = d.cdof[dofs][:, :, 0]                                      # (m, 6): (angular; linear)
        G = np.cross(F, S[:, :3])
        Wsub = np.concatenate([np.cross(p, G), G], axis=1)
        dp = np.cross(S[:, :3], p) + S[:, 3:]
        Wanc = np.concatenate([np.cross(dp, F), np.zeros_like(dp)], axis=1)
        block = np.ix_(dofs, dofs)
        D[block] += np.where(below[block], S @ Wsub.T, np.where(above[block], S @ Wanc.T, 0.0))
    return (model.gravcomp_passive + model.gravcomp_actuator)[:, None] * D


def _tangent_of_scalars(model: Model, X: np.ndarray) -> np.ndarray:
    """A map on q (rows of (., nq)) restricted to the tangent (., nv): scalar q entries carry to their velocity."""
    c = model.coords
    out = np.zeros((X.shape[0], model.nv))
    out[:, c.scalar_v] = X[:, c.scalar_q]
    return out


def _muscle_rate_derivatives(u, act, prm):
    """(d act_dot/du, d act_dot/dact) (each (k,)) of actuation.muscle_dynamics act_dot = dctrl / tau, dctrl = clip(u, 0, 1)
    - act, tau = tau_d + (tau_a - tau_d) s(dctrl / width + 1/2) (s the quintic sigmoid, s' = 30 x^2 (x - 1)^2; width 0:
    tau_a or tau_d by the sign of dctrl), tau_a = p0 (1/2 + 3/2 a), tau_d = p1 / (1/2 + 3/2 a), a = clip(act, 0, 1)."""
    inner = (act > 0) & (act < 1)
    scale = 0.5 + 1.5 * np.clip(act, 0.0, 1.0)
    tau_a, tau_d = prm[:, 0] * scale, prm[:, 1] / scale
    dtau_a, dtau_d = np.where(inner, 1.5 * prm[:, 0], 0.0), np.where(inner, -1.5 * prm[:, 1] / scale**2, 0.0)
    smooth, dctrl = prm[:, 2] >= actuation.MINVAL, np.clip(u, 0.0, 1.0) - act
    width = np.where(smooth, prm[:, 2], 1.0)
    x = dctrl / width + 0.5
    within = (x > 0) & (x < 1)
    sig = np.where(x <= 0, 0.0, np.where(x >= 1, 1.0, x**3 * (3 * x * (2 * x - 5) + 10)))
    # tau and its derivatives in dctrl (through x) and in act (through a)
    tau = np.where(smooth, tau_d + (tau_a - tau_d) * sig, np.where(dctrl > 0, tau_a, tau_d))
    tau_x = np.where(smooth & within, (tau_a - tau_d) * 30 * x**2 * (x - 1) ** 2 / width, 0.0)
    tau_a_ = np.where(smooth, dtau_d + (dtau_a - dtau_d) * sig, np.where(dctrl > 0, dtau_a, dtau_d))
    floor = tau <= actuation.MINVAL                    # tau floored at MINVAL: constant
    tau = np.maximum(actuation.MINVAL, tau)
    tau_x, tau_a_ = np.where(floor, 0.0, tau_x), np.where(floor, 0.0, tau_a_)
    # d(dctrl / tau) = d dctrl / tau - dctrl / tau^2 d tau, d dctrl/du = [0 < u < 1], d dctrl/dact = -1
    du = ((u > 0) & (u < 1)) * (1.0 / tau - dctrl / tau**2 * tau_x)
    da = -1.0 / tau - dctrl / tau**2 * (tau_a_ - tau_x)
    return du, da


def _rate_derivatives(acts, u, act):
    """(d act_dot/du, d act_dot/dact) (na,) each of actuation.activation_rate (each rate depends on its own control u
    (the stateful actuators' clamped controls, (na,)) and activation only): integrator (1, 0), filter and filterexact
    (1 / tau, -1 / tau), muscle _muscle_rate_derivatives."""
    s = acts.stateful
    dyn, prm = acts.dyntype[s], acts.dynprm[s]
    tau = np.maximum(actuation.MINVAL, prm[:, 0])
    du, da = np.where(dyn == DYN_INTEGRATOR, 1.0, 1.0 / tau), np.where(dyn == DYN_INTEGRATOR, 0.0, -1.0 / tau)
    if (dyn == DYN_MUSCLE).any():
        mu, ma = _muscle_rate_derivatives(u, act, prm)
        du, da = np.where(dyn == DYN_MUSCLE, mu, du), np.where(dyn == DYN_MUSCLE, ma, da)
    return du, da


def _activation_step(acts, act, act_dot, h):
    """(c, moving) (na,) of actuation.next_activation act' = clamp(act + c act_dot): c = h (filterexact: tau (1 -
    exp(-h / tau))), moving where act' is strictly inside actrange or unlimited (elsewhere d act' = 0)."""
    s = acts.stateful
    tau = np.maximum(actuation.MINVAL, acts.dynprm[s, 0])
    c = np.where(acts.dyntype[s] == DYN_FILTEREXACT, tau * (1 - np.exp(-h / tau)), h)
    nxt = act + c * act_dot
    lo, hi = acts.actrange[s, 0], acts.actrange[s, 1]
    return c, ~acts.actlimited[s] | ((nxt > lo) & (nxt < hi))


class _Inputs:
    """What each actuator's gain multiplies (actuation.inputs) and its derivatives at clamped controls u (nu,) and
    activations act (na,), with the raw ctrl's clamp (inside: ctrl within ctrlrange): x (nu,), dx/dctrl (nu, nu),
    dx/dact (nu, na); the activation after the step act' (actuation.next_activation at this act_dot) and
    d act'/dctrl (na, nu), d act'/dact (na, na); d act_dot/dctrl (na, nu), d act_dot/dact (na,) (RK4's stages)."""

    def __init__(self, acts, u, inside, act, h):
        nu, na, s = acts.nu, acts.na, acts.stateful
        self.x, self.x_u, self.x_a = u.copy(), np.diag(inside.astype(float)), np.zeros((nu, na))
        self.rate_u, self.rate_a = np.zeros((na, nu)), np.zeros(na)
        self.next_u, self.next_a = np.zeros((na, nu)), np.zeros((na, na))
        if not na:
            return
        idx, rows = np.flatnonzero(s), np.arange(na)
        act_dot = actuation.activation_rate(acts, u, act)
        du, self.rate_a = _rate_derivatives(acts, u[s], act)
        self.rate_u[rows, idx] = du * inside[s]
        c, moving = _activation_step(acts, act, act_dot, h)
        # act' = clamp(act + c act_dot): d act' = moving (d act + c d act_dot)
        self.next_u[rows, idx] = np.where(moving, c * self.rate_u[rows, idx], 0.0)
        self.next_a[rows, rows] = np.where(moving, 1 + c * self.rate_a, 0.0)
        early = acts.actearly[s]
        self.x[s] = np.where(early, actuation.next_activation(acts, act, act_dot, h), act)
        self.x_u[idx] = np.where(early[:, None], self.next_u, 0.0)
        self.x_a[idx] = np.where(early[:, None], self.next_a, np.eye(na))


def _unclamped(acts, q, qd, ctrl, act, h):
    """(u, raw, free, x) (nu each but x): the clamped controls, the actuators' forces before their limits
    (actuation.raw_forces), whether each actuator's derivatives are kept (actuation.unsaturated: inside its forcerange,
    its joint's and its tendon's actuatorfrcrange, or unlimited); x the _Inputs (the raw ctrl's clamp in it)."""
    given = validation.vector("ctrl", ctrl, acts.nu)
    u = forces.clamped_ctrl(acts, given)
    raw = actuation.raw_forces(acts, q, qd, u, act, actuation.activation_rate(acts, u, act), h)
    inside = ~acts.ctrllimited | ((given > acts.ctrlrange[:, 0]) & (given < acts.ctrlrange[:, 1]))
    return u, raw, actuation.unsaturated(acts, raw), _Inputs(acts, u, inside, act, h)


def _tendon_scaling(acts, raw: np.ndarray) -> np.ndarray:
    """d f / d raw (nu, nu) of actuation.tendon_scaled: identity but on a force-limited tendon whose total T of raw is
    outside [low, high], where f_i = raw_i r / T (r the limit passed) gives r / T (delta_ij - raw_i / T) over the
    actuators i, j on that tendon."""
    P = np.eye(acts.nu)
    total = actuation.tendon_totals(acts, raw)
    lo, hi = acts.tendon_frcrange.T
    t = acts.tendon_frcid
    scaled = (t >= 0) & (total != 0) & ((total < lo) | (total > hi))
    for i in np.flatnonzero(scaled).tolist():
        r = lo[i] if total[i] < lo[i] else hi[i]
        group = t == t[i]                              # df_i = r/T (draw_i - raw_i / T sum_j draw_j)
        P[i, group] -= raw[i] / total[i]
        P[i] *= r / total[i]
    return P


def _actuator_derivatives(model: Model, acts, q, qd, ctrl, act, h):
    """(dA/dq, dA/dqd, dA/dctrl, dA/dact) of the actuators' joint force (actuation.joint_force): (nv, nv), (nv, nv),
    (nv, nu), (nv, na), f = gain(l, v) x + bias(l, v) (affine gain and bias; x the _Inputs: ctrl or the activation),
    through a force-limited tendon's scaling (_tendon_scaling).

    Zero where a clamp is active: ctrl outside ctrlrange, a scalar force at or beyond forcerange, a dof's total
    at or beyond its actuatorfrcrange (as MuJoCo's mjd_actuator_vel), act' at its actrange. acts are posed at q
    (actuation.posed). dA/dq and dA/dqd are those of the affine gains and biases on constant moment arms (the length map
    qmoment has no quaternion part); with a _hard_actuators' actuator _HardForces differences them instead. dA/dctrl,
    dA/dact: the gain (muscle's too) at (length, velocity) on the moment arms at q.
    """
    u, raw, _, x = _unclamped(acts, q, qd, ctrl, act, h)
    f = actuation.limited_forces(acts, raw)
    lo, hi = acts.forcerange[:, 0], acts.forcerange[:, 1]
    free = ~acts.forcelimited | ((f > lo) & (f < hi))
    affine_gain, affine_bias = acts.gaintype == AFFINE, acts.biastype == AFFINE
    g, b = np.where(affine_gain[:, None], acts.gain, 0.0), np.where(affine_bias[:, None], acts.bias, 0.0)
    length, velocity = actuation.lengths_velocities(acts, q, qd)
    Lq = _tangent_of_scalars(model, acts.qmoment)
    gain = actuation.gains(acts, length, velocity)[:, None]
    rows = ((g[:, 1] * x.x + b[:, 1])[:, None] * Lq, (g[:, 2] * x.x + b[:, 2])[:, None] * acts.moment,
            gain * x.x_u, gain * x.x_a)              # d raw / d (q, qd, ctrl, act)
    S = free[:, None] * (_tendon_scaling(acts, raw) if (acts.tendon_frcid >= 0).any() else np.eye(acts.nu))
    tau = acts.moment.T @ f
    dlo, dhi = acts.dof_forcerange.T
    keep = (~acts.dof_forcelimited | ((tau > dlo) & (tau < dhi)))[:, None]
    return tuple(np.where(keep, acts.moment.T @ (S @ y), 0.0) for y in rows), x


def _damping_input_derivative(model: Model, acts, q, qd, ctrl, act, h, a, name: str = "implicit"):
    """(d(D a)/dctrl (nv, nu), d(D a)/dact (nv, na)) for the implicit integrators' matrix K = M - h D at a fixed a: D's
    actuator part sum_k moment_k^T (b2 + g2 x_k) moment_k (forces.actuator_velocity_derivative; M's pattern, symmetric in
    each term, x the _Inputs; g2 a muscle's dgain/dvelocity for a muscle gain; acts posed at q) changes with x_k by
    g2_k (pattern * moment_k moment_k^T), zero where the force is clamped or the joint's or tendon's total is at its
    actuatorfrcrange (actuation.unsaturated: k is not in D). So K a = f gives K da/dy = df/dy + h d(D a)/dy: zero
    without a velocity gain (none affine in velocity, no muscle). D on the integrator `name`'s pattern
    (forward.step_pattern)."""
    g2 = np.where(acts.gaintype == AFFINE, acts.gain[:, 2], 0.0)
    m = acts.gaintype == MUSCLE
    if not (g2.any() or m.any()):
        return np.zeros((model.nv, acts.nu)), np.zeros((model.nv, acts.na))
    _, _, free, x = _unclamped(acts, q, qd, ctrl, act, h)
    if m.any():                                        # a muscle's dgain/dvelocity (mjd_muscleGain_vel)
        length, velocity = actuation.lengths_velocities(acts, q, qd)
        g2[m] = actuation.muscle_gain(length[m], velocity[m], acts.lengthrange[m], acts.acc0[m], acts.gainprm[m],
                                      derivative=True)
    g2 = np.where(free, g2, 0.0)
    moment = np.asarray(acts.moment)                   # column k of W (nv, nu): g2_k m_k * (pattern (m_k * a))
    W = (g2[:, None] * moment * ((moment * a) @ forward.step_pattern(model, name).T)).T
    return W @ x.x_u, W @ x.x_a


def _metric_input_derivative(acts, q, qd, ctrl, act, h, a, free_rows):
    """(dr/dctrl (nv, nu), dr/dact (nv, na)) of the discrete step's r = -h (B a + h K a + K qd) at a fixed a (r = -h K qd
    alone on free_rows (nv,) bool: the standalone free bodies' rows, solved in their implicitfast blocks): the servos'
    parts of B and K, sum_k moment_k^T max(-slope_k, 0) moment_k (actuation.servo_metric, slope_k = bias_k + g_k x_k),
    move with the gain's input x_k (the _Inputs: ctrl or the activation) by -g_k where the slope is stabilizing
    (negative), not at all where the force is clamped (servo_slopes gives it zero there). acts posed at q."""
    u = forces.clamped_ctrl(acts, validation.vector("ctrl", ctrl, acts.nu))
    act_dot = actuation.activation_rate(acts, u, act)
    raw = actuation.raw_forces(acts, q, qd, u, act, act_dot, h)
    x = _unclamped(acts, q, qd, ctrl, act, h)[3]
    c = []
    for column in (2, 1):                              # B (velocity), K (length)
        g = np.where(acts.gaintype == AFFINE, acts.gain[:, column], 0.0)
        c.append(np.where(actuation.servo_slopes(acts, u, raw, act, act_dot, h, g, column) < 0, -g, 0.0))
    ma, mq = acts.moment @ a, acts.moment @ qd
    W = acts.moment.T * (h * c[0] * ma + h * h * c[1] * ma)[None, :]   # d(h B a + h^2 K a)/dx_k, column k
    W[free_rows] = 0.0
    W = -(W + acts.moment.T * (h * c[1] * mq)[None, :])               # r = -(...) - h K qd
    return W @ x.x_u, W @ x.x_a


def _free_rows(model: Model) -> np.ndarray:
    """(nv,) bool: the dofs of the standalone free bodies (forward.free_body_blocks)."""
    rows = np.zeros(model.nv, bool)
    for adr in standalone_free_dofs(model):
        rows[adr:adr + 6] = True
    return rows


def check_tendons(model: Model) -> None:
    """UnsupportedModelError for a spatial tendon's armature (its M moves with q and MuJoCo adds a bias, mj_tendonBias:
    not differentiated; the loader refuses it today, physai.engine.loaders)."""
    heavy = _spatial_tendons(model) & (model.tendon_armature != 0) if model.ntendon else np.zeros(0, bool)
    if heavy.any():
        raise UnsupportedModelError(f"step_derivatives differentiates fixed tendons' armature; tendon "
                                    f"{model.tendon_name[int(np.flatnonzero(heavy)[0])]!r} is spatial and has armature")


def check_actuators(model: Model) -> None:
    """UnsupportedModelError for a body's transmission (adhesion: its moment arms come from the contacts, which step
    derivatives leave out); every other transmission, gain, bias and activation dynamics is differentiated."""
    acts = model.actuators
    if acts is None:
        return
    body = np.flatnonzero(acts.trntype == TRN_BODY)
    if body.size:
        raise UnsupportedModelError(f"step_derivatives differentiates the smooth dynamics; actuator {acts.names[body[0]]!r}"
                                    " is an adhesion actuator (a body's transmission: its moment arms come from the "
                                    "contacts); simulate, step and rollout run it")


@per_model
def _checked(model: Model) -> bool:
    """Whether check_tendons and check_actuators pass on the model (made once per model)."""
    try:
        check_tendons(model)
        check_actuators(model)
    except UnsupportedModelError:
        return False
    return True


@per_model
def numpy_only(model: Model) -> str:
    """What of the model the compiled step_derivatives (cpp/step_derivative.h) does not model, by name ("" when it
    models everything): the NumPy text then runs. Made once per model."""
    acts = model.actuators
    reasons = {"activations": acts is not None and acts.na > 0, "tendon forces": model.has_tendon_forces,
               "gravity compensation or fluid forces": passive.has_body_forces(model),
               "muscle gains or biases, or configuration-dependent moment arms":
                   acts is not None and bool(_hard_actuators(acts).any())}
    return ", ".join(name for name, present in reasons.items() if present)


# ---------------------------------------------------------------- the retraction q (+) s w

def _dexp_inv_jacobians(model: Model, theta: np.ndarray, v: np.ndarray):
    """(dk/dtheta, dk/dv) (nv, nv) of k = joints.dexp_inv(theta, v): identity in v and zero in theta for scalars; for a
    rotation k = v + 1/2 theta x v + c(t) theta x (theta x v), t = |theta|:
    dk/dv = 1 + 1/2 [theta] + c [theta]^2,  dk/dtheta = -1/2 [v] + c (theta v^T + (theta . v) 1 - 2 v theta^T)
    + (theta x (theta x v)) c'(t) theta^T / t."""
    Kt, Kv = np.zeros((model.nv, model.nv)), np.eye(model.nv)
    for a in model.coords.quat_v.tolist():
        k = slice(a, a + 3)
        th, w = theta[k], v[k]
        t = float(np.linalg.norm(th))
        c = float(joints.dexp_inv_coefficient(t))
        if t < 1e-2:                                   # c'(t) / t = 1/360 + t^2/7560 + O(t^4): no cancellation
            dc_t = 1.0 / 360.0 + t * t / 7560.0
        else:
            g = 2.0 * t * np.tan(0.5 * t)
            dc_t = (-2.0 / t**3 + (2.0 * np.tan(0.5 * t) + t / np.cos(0.5 * t) ** 2) / g**2) / t
        T, V = skew(th), skew(w)
        Kv[k, k] = np.eye(3) + 0.5 * T + c * T @ T
        Kt[k, k] = -0.5 * V + c * (np.outer(th, w) + (th @ w) * np.eye(3) - 2.0 * np.outer(w, th)) \
            + np.outer(np.cross(th, np.cross(th, w)), th) * dc_t
    return Kt, Kv


def _retraction(model: Model, w: np.ndarray, s: float):
    """Tangent maps of q' = q (+) s w (physai.joints.integrate), both (nv, nv), tangents at q and at q':
    dq' = Ad dq + Jw dw. Scalars: Ad = 1, Jw = s. Quaternions (q' = q exp(s w)): Ad = exp(s w)^T, Jw = s J_r(s w).
    A rotation s w that is not finite gives NaN blocks (step_derivatives then names the timestep)."""
    Ad, Jw = np.eye(model.nv), s * np.eye(model.nv)
    if not np.isfinite(s * w).all():
        return np.full_like(Ad, np.nan), np.full_like(Jw, np.nan)
    if model.coords.quat_v.size:                       # every quaternion's blocks at once
        _, iv = model.coords.quats()
        phi = s * w[iv]
        R, Jr = so3_exp(phi), so3_right_jacobian(phi)
        Ad[iv[:, :, None], iv[:, None, :]] = np.swapaxes(R, -1, -2)
        Jw[iv[:, :, None], iv[:, None, :]] = s * Jr
    return Ad, Jw


# ---------------------------------------------------------------- one step

class _Stepper:
    """The pieces of one integrator step and their derivatives at a state."""

    def __init__(self, model, h, inputs, euler_damping, act, name, constraints: bool = False):
        self.model, self.h, self.x, self.euler_damping = model, h, inputs, euler_damping
        self.act, self.name = act, name
        self.constraints = _Constraints(model) if constraints else None
        if constraints and name == "discrete":         # the rows at the step's end, diagApprox in diag(M^) at each q
            self.constraints.discrete = (h, self._discrete_diagonal(inputs, euler_damping, act))
        acts = inputs.actuators
        self.nu, self.na = (0, 0) if acts is None else (acts.nu, acts.na)
        self.Pq, self.Pv = _passive_derivatives(model)

    @functools.cached_property
    def run(self) -> engine.DynamicsEvaluator:
        """The step's evaluator (its workspace), made at first use (the compiled constrained step's front never reads it)."""
        return engine.DynamicsEvaluator(self.model, self.h, self.x, self.euler_damping, act=self.act)

    @functools.cached_property
    def hard(self) -> "_HardForces":
        """The differenced forces (_HardForces), made at first use (the compiled constrained step never reads them)."""
        return _HardForces(self.model, self.h, self.x, self.euler_damping, self.act, self.name)

    def _discrete_diagonal(self, inputs, euler_damping, act):
        """diag(M + h B + h^2 K) (nv,) at (q, qd): a function of its own evaluator (the discrete rows' diagApprox)."""
        model, h = self.model, self.h
        probe = engine.DynamicsEvaluator(model, h, inputs, euler_damping, act=act)

        def diagonal(q, qd):
            M = probe.evaluate(q, qd, energy=False)[0]
            return np.diag(forward.discrete_step_metric(model, q, qd, h, M, probe.actuators, inputs.ctrl, probe.act).M_hat).copy()
        return diagonal

    def force_derivatives(self, q, qd, act, a):
        """(df/dq, df/dqd, df/dctrl, df/dact, _Inputs or None) of f = actuator + passive + applied (the bias is handled
        through rnea) at the activations act, after run.evaluate(q, qd, act) (its actuators posed at q), with the
        _HardForces' differences at the acceleration a (h D a among them: K's motion with (q, qd))."""
        model, nv = self.model, self.model.nv
        Pq, Pv = self.Pq, self.Pv
        tendons = model.ntendon and (model.tendon_stiffness.any() or model.tendon_damping.any())
        if tendons or passive.has_gravcomp(model):     # the workspace at (q, qd) (the compiled evaluate leaves it empty)
            velocity_stages(model, self.run.d, q[:, None], qd[:, None])
        if tendons:
            Tq, Tv = _tendon_derivatives(model, self.run.d, q)
            Pq, Pv = Pq + Tq, Pv + Tv
        if passive.has_gravcomp(model):
            Pq = Pq + _gravcomp_derivative(model, self.run.d)
        self.hard.act = act
        Hq, Hv = self.hard.derivatives(q, qd, a)
        Pq, Pv = Pq + Hq, Pv + Hv
        if self.x.actuators is None:
            return Pq, Pv, np.zeros((nv, self.nu)), np.zeros((nv, self.na)), None
        (Aq, Av, Au, Aa), x = _actuator_derivatives(model, self.run.actuators, q, qd, self.x.ctrl, act, self.h)
        if self.hard.actuators:                        # differenced in Hq, Hv
            return Pq, Pv, Au, Aa, x
        return Pq + Aq, Pv + Av, Au, Aa, x

    def constrained_terms(self, q, qd, act) -> dict | None:
        """The compiled constrained step's terms at (q, qd) (_compiled_constrained): acceleration()'s evaluate and solve
        (one compiled call where the solver is compiled: solve's front), then the rows' derivatives
        (_Constraints.terms), by name (_Constraints.compiled_terms); None where the forces are not finite or the call
        fails (the NumPy text then names what overflows or what is wrong)."""
        if self.constraints.discrete is None and native.compiled_solver(self.model) and not act.size:
            solved = self.constraints.solve(q, qd, None, None, front=self.x)   # evaluate in the solve's call
        else:
            M, f, _ = self.run.evaluate(q, qd, act, energy=False)
            solved = self.constraints.solve(q, qd, M, f, self.run.tau) if np.isfinite(f).all() else None
        if solved is None:
            return None
        return self.constraints.compiled_terms(self.constraints.terms(q, qd), solved[1])

    def refuse_overflow(self, q, qd, f) -> None:
        """InvalidStateError for finite inputs whose accelerations are not: which forces overflow, and the input that
        drives them (the velocities, whose products grow with their square; or the applied forces, the controls)."""
        x = self.x
        largest = {"qd": np.abs(qd).max(initial=0.0)}
        if x.qfrc_applied is not None:
            largest["qfrc_applied"] = np.abs(x.qfrc_applied).max(initial=0.0)
        if x.ctrl is not None:
            largest["ctrl"] = np.abs(x.ctrl).max(initial=0.0)
        inputs = ", ".join(f"|{k}| up to {v:.3g}" for k, v in largest.items())
        if not np.isfinite(f).all():
            with np.errstate(over="ignore", invalid="ignore"):
                at_rest = self.run.evaluate(q, np.zeros_like(qd), energy=False)[1]
            cause = ("the velocities overflow the velocity-product (Coriolis and centrifugal) forces, which grow with "
                     "qd squared" if np.isfinite(at_rest).all() else "the applied forces or the controls overflow")
            raise InvalidStateError(f"step_derivatives: the forces at this state are not finite although the inputs are "
                                    f"({inputs}): {cause}; expected inputs whose forces are finite numbers")
        raise InvalidStateError(f"step_derivatives: the accelerations at this state are not finite although the forces "
                                f"are ({inputs}): they overflow, or a body moves without mass, inertia or armature")

    def acceleration(self, q, qd, name, act):
        """(a, da/dq, da/dqd, da/dctrl, da/dact, _Inputs or None) of K a = f (+ qfrc_constraint with constraints) at the
        activations act: K = M (rk4, euler without damping), M + h B (euler), M - h D."""
        if name == "discrete":
            return self.discrete_acceleration(q, qd, act)
        model, h, x = self.model, self.h, self.x
        M, f, _ = self.run.evaluate(q, qd, act, energy=False)
        if not np.isfinite(f).all():
            self.refuse_overflow(q, qd, f)
        qfrc = 0.0
        if self.constraints is not None:               # the constrained solve in M (mj_fwdConstraint), then K as below
            a_c, qfrc = self.constraints.solve(q, qd, M, f, self.run.tau)
        free = []                                      # implicitfast: standalone free bodies in their own blocks
        if name == "rk4" or (name == "euler" and not (self.euler_damping and (model.dof_damping > 0).any())):
            K = M
        else:
            try:
                acts = self.run.actuators                  # posed at q
                K = integ.step_matrix(model, q, qd, h, name, acts, x.ctrl, M, self.euler_damping, act)
                if name == "implicitfast":
                    free = forward.free_body_blocks(model, q, qd, h, M, acts, x.ctrl, act)
            except InvalidStateError:                  # the bias's velocity derivative overflowed
                self.refuse_overflow(q, qd, np.full_like(f, np.nan))
            for adr, block in free:
                K[adr:adr + 6, adr:adr + 6] = block
        a = solve(K, f + qfrc)
        if not np.isfinite(a).all():
            self.refuse_overflow(q, qd, f)
        acts = self.run.actuators                      # posed at q (before the differences move the probe)
        Fq, Fv, Fu, Fa, inputs = self.force_derivatives(q, qd, act, a)
        tq, tv, _ = rnea_derivatives(model, q, qd, a)                 # compiled when the backend is native
        rq, rv = Fq - tq, Fv - tv
        if self.constraints is not None:               # d qfrc_constraint, from f's derivatives alone (h D a aside)
            Fq0, Fv0 = (Fq, Fv) if not (self.hard.any and self.hard.damping) else \
                self.force_derivatives(q, qd, act, np.zeros(model.nv))[:2]
            cq, cv, _ = rnea_derivatives(model, q, qd, a_c)
            Cq, Cv, Cu, Ca = self.constraints.derivatives(q, qd, Fq0 - cq, Fv0 - cv, Fu, Fa)
            rq, rv, Fu, Fa = rq + Cq, rv + Cv, Fu + Cu, Fa + Ca
        if name == "implicit" or free:
            # K = M - h D with D containing -dc/dqd(q, qd) (implicit: every row; implicitfast: a free body's block);
            # d(K a) adds h d(dc/dqd a)/dx, where dc/dqd(q, qd) a = (c(q, qd + a) - c(q, qd - a)) / 2 exactly (c is
            # quadratic in qd; a free body's rows of c depend on its own velocities only)
            rows = slice(None) if name == "implicit" else np.concatenate([np.arange(adr, adr + 6) for adr, _ in free])
            cq, cv, _ = rnea_derivatives(model, q, np.stack([qd + a, qd - a]), np.zeros(model.nv))
            rq[rows] = rq[rows] - 0.5 * h * (cq[0] - cq[1])[rows]
            rv[rows] = rv[rows] - 0.5 * h * (cv[0] - cv[1])[rows]
        if name in ("implicit", "implicitfast") and x.actuators is not None:   # K's actuator damping moves with its input
            Du, Da = _damping_input_derivative(model, acts, q, qd, x.ctrl, act, h, a, name)
            Fu, Fa = Fu + h * Du, Fa + h * Da
        Kinv = inverse(K)
        return a, Kinv @ rq, Kinv @ rv, Kinv @ Fu, Kinv @ Fa, inputs


    def discrete_acceleration(self, q, qd, act):
        """(a, da/dq, da/dqd, da/dctrl, da/dact, _Inputs or None) of MuJoCo 4's discrete step (engine.forward.discrete):
        M^ a = f - h K qd with M^ = M + h B + h^2 K (forward.discrete_metric_terms), a standalone free body's rows in its
        implicitfast block without actuator damping (forward.free_body_blocks) unless a row or a tendon or actuator
        term of M^ reaches it (forward.discrete_metric_terms). Differentiating at a, for an input y:

            M^ da/dy = df/dy - d(M a)/dy|a - h K dqd/dy - h (dB/dy a + h dK/dy a + dK/dy qd)

        d(M a)/dy by rnea_derivatives at a; B's and K's motion with ctrl and act analytic (the servos' slopes:
        _metric_input_derivative), with (q, qd) differenced where they move (fluid drag, spatial tendons, configuration-
        dependent moment arms: _HardForces.metric_force) and otherwise none (the joints', the fixed tendons' with constant
        J and a dead band piecewise constant, the servos' on constant moment arms). A free body's rows take
        implicitfast's terms instead (its bias's derivative)."""
        model, h, x = self.model, self.h, self.x
        M, f, _ = self.run.evaluate(q, qd, act, energy=False)
        if not np.isfinite(f).all():
            self.refuse_overflow(q, qd, f)
        acts = self.run.actuators                      # posed at q
        M_hat, K, moved, _ = forward.discrete_step_metric(model, q, qd, h, M, acts, x.ctrl, act)
        rhs = f - h * K @ qd
        if self.constraints is not None:               # the solve in M^ with the rows at the step's end
            forward.refuse_discrete_couplings(model, acts)
            a = self.constraints.solve(q, qd, M_hat, rhs)[0]
            moved = moved | (self.constraints.r.J != 0).any(axis=0)
        explicit = forward.explicit_couplings(model)  # PGS: the tendons' and servos' terms out of M^ and the blocks
        free = [(adr, block) for adr, block in forward.free_body_blocks(model, q, qd, h, M, tendon_dampers=not explicit)
                if not moved[adr:adr + 6].any()]       # the free bodies no row or coupled term reaches: their blocks
        rows = np.zeros(model.nv, bool)
        for adr, _ in free:
            rows[adr:adr + 6] = True
        for adr, block in free:
            M_hat[adr:adr + 6, adr:adr + 6] = block
        if self.constraints is None:
            a = solve(M_hat, rhs)
        else:                                          # the free bodies' rows again in their blocks; H's metric
            for adr, block in free:
                a[adr:adr + 6] = solve(block, rhs[adr:adr + 6])
            self.constraints.M = M_hat.copy()
        if not np.isfinite(a).all():
            self.refuse_overflow(q, qd, f)
        self.hard.free_rows = rows
        Fq, Fv, Fu, Fa, inputs = self.force_derivatives(q, qd, act, a)   # _HardForces: the metric's motion in (q, qd)
        tq, tv, _ = rnea_derivatives(model, q, qd, a)
        rq, rv = Fq - tq, Fv - tv
        if not self.hard.any:                          # -h K qd (differenced with the rest otherwise)
            rv = rv - h * K
        if free:                                       # h d(dc/dqd a)/dx on a free body's rows, as implicitfast's
            cq, cv, _ = rnea_derivatives(model, q, np.stack([qd + a, qd - a]), np.zeros(model.nv))
            rq[rows] = rq[rows] - 0.5 * h * (cq[0] - cq[1])[rows]
            rv[rows] = rv[rows] - 0.5 * h * (cv[0] - cv[1])[rows]
        if acts is not None and not explicit:          # the servos' B and K move with their input
            Wu, Wa = _metric_input_derivative(acts, q, qd, x.ctrl, act, h, a, rows)
            Fu, Fa = Fu + Wu, Fa + Wa
        if self.constraints is not None:               # M^ da = r + dqfrc_constraint (the rows at the optimum)
            Cq, Cv, Cu, Ca = self.constraints.derivatives(q, qd, rq, rv, Fu, Fa)
            rq, rv, Fu, Fa = rq + Cq, rv + Cv, Fu + Cu, Fa + Ca
        Kinv = inverse(M_hat)
        return a, Kinv @ rq, Kinv @ rv, Kinv @ Fu, Kinv @ Fa, inputs


def step_derivatives(model, q, qd, dt=None, integrator=None, ctrl=None, qfrc_applied=None, euler_damping=None, act=None,
                     constraints: bool = False, margins: bool = False, qacc_warmstart=None):
    """Linearisation of one physai.integrators.step: (A, B) with [dq'; dqd'; dact'] = A [dq; dqd; dact] + B dctrl.

    Args:
        model: a physai.engine.Model (its actuators drive ctrl) or what physai.engine.as_model takes.
        q (nq,) or (N, nq), qd (nv,) or (N, nv): the state [rad | m | quaternion], [rad/s | m/s]; dt [s] > 0.
        integrator: "euler" (implicit damping unless euler_damping=False), "implicit", "implicitfast", "rk4" or
            "discrete" (MuJoCo 4's mjINT_DISCRETE: _Stepper.discrete_acceleration), or
            MuJoCo's mjtIntegrator value. dt, integrator and euler_damping default to the model's (model.opt), as
            physai.integrators.step's (physai.integrators.model_options).
        ctrl: (nu,) or (N, nu) controls (default zeros); qfrc_applied: (nv,) or (N, nv) constant generalized force
            [N m | N]. A single state (or input) is shared by every state of a batch.
        act: (na,) or (N, na) the activations of the actuators with activation dynamics (default zeros), part of the
            state when the model has any (na > 0).
        constraints: False (default): the smooth dynamics (MuJoCo's step with mjDSBL_CONSTRAINT). True: the step of
            physai.integrators.step(..., constraints=True), through the constraint solver's optimum (_Constraints):
            contacts, limits, friction loss and equalities, both cones, each row held in its state (satisfied,
            quadratic, linear, on the cone); InvalidStateError where a row appears or disappears within the
            differencing step, or a sphere's or capsule's contact point reaches or leaves its segment's end there (nearly
            parallel capsules), a contact frame's tangent switches there (make_frame's at |n_y| = 1/2, a capsule
            upright on a plane), a cylinder lies flat on a plane within FLAT_REACH ROW_STEP (1e-4 rad), a cylinder
            on a box or a mesh has its whole cap's rim below the face within that, or its axis along a box's face
            within the differencing step (MuJoCo's multi-contact jumps there), any multi-contact pair's clipped points (two
            boxes or meshes, cylinders, a capsule on a cylinder or a mesh) jump or kink between the differences'
            points (its clipped polygon changes, or its largest quadrilateral switches or ties: a regular polygon
            inside a face, two squares turned 45 degrees; a tie rounding breaks alike at every point is not seen,
            nor given a margin), or a row's
            impedance reaches its kink there (solimp's power 1 at |pos - margin| =
            width, or an equality's pos = 0; the discrete step's R at its MAXIMP cap; powers above 1 are C1 at
            the width and the midpoint: not refused, the
            analytic rows exact there, the differenced ones to their 4th-order truncation (each row's impedance held at
            its tangent at q, the discrete step's too: _tangent_impedance, _discrete_tangent_impedance) while MuJoCo's
            centred differences scatter by O(eps)) (margins=True says how close the rows are to each). The rows'
            dependence on q (Jacobians, contact geometry, impedance, aref) is analytic
            for contacts of a plane against a sphere, capsule or box and between spheres and capsules (dim 1 or 3,
            pyramidal) and hinge or slide limits, differenced (4th order) for the other rows (a connect's and a weld's
            Jacobians' analytic within them: _anchor_rows), the rest analytic. On
            the compiled backend the rows, the contacts, the solve and the contacts' analytic rows (plane_,
            segment_contact_rows) are the compiled engine's, and with euler, implicit or implicitfast on what the
            compiled step models (numpy_only) the smooth forces and the solve are one compiled call (solve's front), the
            still dofs' proof and detection another (_checked_still), and everything after the rows' derivatives one
            more, per state (_compiled_constrained); the refusals, the rows' differences and rk4's stages run on the NumPy text, the
            discrete step's rows and solve NumPy's, as its engine's. Where every row is analytic and no dof moves one
            (planes against spheres, capsules and boxes, sphere and capsule pairs, hinge and slide limits, joint
            equalities, friction loss; away from the refusals' switches) the whole state is one compiled call
            (_one_call), a batch's states on threads.
        margins: with constraints=True, also return how far the state is from a switch or kink (the smallest over
            RK4's stages): where they are small the linearisation holds only that close.
        qacc_warmstart: (nv,) or (N, nv) [rad/s^2 | m/s^2], with constraints=True: where the constraint solver starts
            (MuJoCo's qacc_warmstart, which mjd_transitionFD's steps start from: e.g. the simulator's
            d.qacc_warmstart), taken where its cost is below the unconstrained accelerations', as the step's own solve
            (every RK4 stage's). None (default): the unconstrained accelerations. A start near the optimum saves
            Newton iterations; A and B move with it only within the solver's tolerance (model.opt.tolerance). Needs
            constraints=True (the smooth step has no solve).

    Returns:
        A (2 nv + na, 2 nv + na), B (2 nv + na, nu), or (N, ...) for a batch: MuJoCo's layout (mjd_transitionFD without
        sensors); with margins=True also the margins (4,) or (N, 4): [acceleration, distance] (switch_margins), then
        [impedance kink [m | rad], frame switch [1]] (_Constraints._break_margins: a power-1 impedance's distance
        to its kink, | |pos - margin| - width | (an equality's the smaller of that and |pos|), or under the discrete
        step a row's distance to where its R meets the MAXIMP cap (engine.constraint.impedance_caps), over its rate
        along its fastest dof (refused below 2 ROW_STEP = 2e-6); [3] not divided by a rate: | |n_y| - 1/2 | of a
        contact with make_frame's default tangent, or the sine of a capsule's or a cylinder's axis from a plane's
        normal, or a cylinder's on a box or a mesh its sine from the face's normal (on a box its cosine too), on two scales: a
        cylinder's sine refused below FLAT_REACH ROW_STEP (1e-4) times its axis's rate (on a face: below that plus depth / (2
        radius), its whole rim below the face), the others below 2 ROW_STEP (2e-6) times theirs (1 for a free body's
        rotation)); inf where there is no
        such row. (Before 2026-12-05 it was (2,): [0] and [1] are unchanged.) The state is (dq, dqd, dact) with dq
        in the tangent space of physai.joints.integrate (MuJoCo's mj_differentiatePos): at q for the inputs, at q'
        for the outputs (for a quaternion, dq' = exp(h w)^T dq + h J_r(h w) dw).
    Passive damping and springs, the actuators' gains and biases (zero where ctrl or a force is clamped), the
    bias and the mass matrix all enter, analytically: the accelerations by rnea_derivatives, "implicit" also
    through the q and qd dependence of its matrix M - h D (exactly, by the bilinearity of the bias), "implicit" and
    "implicitfast" through the ctrl and act dependence of that matrix (an actuator's velocity gain, a damper's -kv
    ctrl), implicitfast's standalone free bodies through their own blocks of that matrix (as its step solves them),
    rk4 by chaining the derivatives of its four stages, and "discrete" through its metric M + h B + h^2 K and right side
    f - h K qd, the servos' B and K moving with ctrl and act (a free body coupled to other joints in that metric is
    refused by name); with constraints=True its solve in that metric, each row's spring-damper at the step's end.
    Activation dynamics (integrator, filter, filterexact, muscle; actearly: the force takes act', clamped to actrange)
    enter through the gains' input and act' = act + h act_dot
    (filterexact exactly). Fixed tendons' springs (dead band included), dampers and armature, and gravity compensation
    enter analytically. The forces with many branches enter by 4th-order centred differences of those forces alone
    (_HardForces, at the step's acceleration, inside the analytic step): fluid forces (the inertia-box model; the
    ellipsoid model under euler and rk4: the implicit integrators refuse it, passive.check_integrator), spatial tendons'
    springs and dampers (their armature is refused: check_tendons), muscle gains and biases and configuration-dependent
    moment arms (every transmission but adhesion, refused by name: check_actuators), and under implicit and
    implicitfast the motion of their velocity derivative in M - h D. The model's constraints enter with constraints=True
    only.
    On the compiled backend every state is one C++ call (cpp/step_derivative.h, batches on threads); a state it cannot
    do (a zero quaternion, forces or results that are not finite) is done again by the NumPy text, which names the error.
    What the compiled kernel does not model (numpy_only names it: activations, tendon forces, gravity compensation, fluid
    forces, muscles, configuration-dependent moment arms) runs on the NumPy text (so the discrete integrator's metric in
    the kernel is the joints' B and K and the servos' slopes).
    """
    model = model if type(model) is Model else engine.as_model(model)
    dt, integrator, euler_damping, _ = integ.model_options(model, dt, integrator, euler_damping, False)
    if not _checked(model):                           # names what is refused
        check_tendons(model)
        check_actuators(model)
    constraints = validation.flag("constraints", constraints)
    if validation.flag("margins", margins) and not constraints:
        raise InvalidArgumentError("margins=True needs constraints=True: the smooth step has no rows to switch")
    if qacc_warmstart is not None and not constraints:
        raise InvalidArgumentError("qacc_warmstart needs constraints=True: the smooth step has no constraint solve to start")
    na = 0 if model.actuators is None else model.actuators.na
    explicit = integrator == "discrete" and forward.explicit_couplings(model) and \
        forward.metric_couplings(model, model.actuators)               # PGS's explicit servo terms: the NumPy text's
    kernel = native.on and not numpy_only(model)
    compiled = kernel and not constraints and not explicit   # the kernel declines, NumPy runs
    constrained = kernel and constraints and COMPILED_STEP and \
        integrator in ("euler", "implicit", "implicitfast")     # _compiled_constrained, state by state
    if compiled and act is None:
        fast = _compiled_one_state(model, q, qd, dt, integrator, ctrl, qfrc_applied, euler_damping)
        if fast is not None:
            return fast
    if constrained and act is None and not (type(q) is np.ndarray and q.ndim == 2):   # a batch: not one plain state
        fast = _constrained_one_state(model, q, qd, dt, integrator, ctrl, qfrc_applied, euler_damping, margins,
                                      qacc_warmstart)
        if fast is not None:
            return (*fast[0], fast[1]) if margins else fast[0]
    name, h = integrator, integ.check_timestep(dt)
    euler_damping = validation.flag("euler_damping", euler_damping)
    actuators, ctrl = integ.check_actuators(model, None, ctrl)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv))
    if actuators is not None:
        arrays["ctrl"] = (ctrl, actuators.nu)
    if qfrc_applied is not None:
        arrays["qfrc_applied"] = (qfrc_applied, model.nv)
    if act is not None:
        arrays["act"] = (act, na)
    if qacc_warmstart is not None:
        arrays["qacc_warmstart"] = (qacc_warmstart, model.nv)
    x, batch = _plain_batch(arrays)                    # (n, size) each: a plain batch's copies, else checked
    if x is None:
        columns, batch = validation.states(**arrays)
        x = {key: np.ascontiguousarray(c.T) for key, c in zip(arrays, columns)}
    n = 1 if batch is None else batch
    nv, nu = model.nv, 0 if actuators is None else actuators.nu
    tried = False                                      # whether the batch's states took the one call (_one_call)
    if compiled:
        A, B, status = _compiled_step_derivatives(model, StepOptions(name, h, euler_damping), actuators, x["q"], x["qd"],
                                                  x.get("ctrl"), x.get("qfrc_applied"))
        redo = status.nonzero()[0].tolist() if status.any() else ()
    else:
        size = 2 * nv + na
        A, B, redo = np.empty((n, size, size)), np.empty((n, size, nu)), range(n)
        if constrained and act is None and n > 1 and ONE_CALL and ANALYTIC_ROWS and COMPILED_PIECES:
            found = _one_call(model, name, h, euler_damping, x["q"], x["qd"], x.get("ctrl"), x.get("qfrc_applied"),
                              x.get("qacc_warmstart"))
            if found is not None:                      # the batch in one compiled call, on threads: the rest state by state
                A, B, status, taken_margins = found
                redo, tried = status.nonzero()[0].tolist(), True
    distances = np.full((n, 4), np.inf)
    if tried and margins:                              # the one call's states' margins
        distances[status == 0] = taken_margins[status == 0]
    for k in redo:
        inputs = {key: x[key][k] if key in x else None for key in ("q", "qd", "ctrl", "qfrc_applied")}
        act_k = x["act"][k] if "act" in x else None      # the NumPy text's alone: numpy_only keeps activations from the kernel
        warm = x["qacc_warmstart"][k] if "qacc_warmstart" in x else None
        try:
            fast = _compiled_constrained(model, name, h, euler_damping, **inputs, margins=margins, one_call=not tried,
                                         qacc_warmstart=warm) if constrained else None
            if fast is None:
                T, distances[k] = _step_derivatives(model, name, h, euler_damping, **inputs, act=act_k, constraints=constraints,
                                                    margins=margins, qacc_warmstart=warm)
        except (InvalidStateError, InvalidArgumentError) as error:
            if batch is None:
                raise
            raise type(error)(f"{error} (state {k} of {n})") from None
        if fast is None:
            A[k], B[k] = T[:, :A.shape[-1]], T[:, A.shape[-1]:]
        else:
            (A[k], B[k]), distances[k] = fast
    if margins:
        return (A[0], B[0], distances[0]) if batch is None else (A, B, distances)
    return (A[0], B[0]) if batch is None else (A, B)


def _compiled_step_derivatives(model, options: StepOptions, actuators, q, qd, ctrl, qfrc_applied, constraints=None):
    """(A (n, 2 nv, 2 nv), B (n, 2 nv, nu), status (n,): nonzero where the kernel declines a state) of n states in one
    compiled call (cpp/step_derivative.h): q (nq,) or (n, nq), qd likewise; ctrl (n, nu), qfrc_applied (n, nv) or None;
    constraints: one state's constrained terms (_Stepper.constrained_terms), or None for the smooth step."""
    fields = native.step_derivative_fields(model, options, actuators, ctrl, qfrc_applied)
    if constraints is not None:
        fields["constraints"] = constraints
    return native.STEP_DERIVATIVES(model, q, qd, fields)


def _compiled_constrained(model, name, h, euler_damping, q, qd, ctrl, qfrc_applied, margins=False, one_call=True,
                          qacc_warmstart=None):
    """step_derivatives(constraints=True) of one checked state (euler, implicit or implicitfast; a model the compiled step
    models, numpy_only "": without activations, so no act) with the step in one compiled call: the NumPy text's
    evaluate, solve, refusals and rows' q-derivatives (_Stepper.constrained_terms) but the plane contacts' (their
    arrays handed on: _Constraints.step_planes), then everything after them in cpp/step_derivative.h -- the plane
    contacts' rows (plane_forces), the forces' and rnea's derivatives, H = M + J^T S J, the rows' force derivatives
    (_analytic_forces, _product_rule), _times_S, _hessian_solve (both branches), da (constrained_derivatives), K,
    its solve and the retraction (acceleration, step_derivative). The solve starts from qacc_warmstart (nv,) where
    given and its cost is lower. ((A, B), margins (4,)), or None where the kernel declines the state (the NumPy text then
    redoes it and names what is wrong)."""
    if one_call and ONE_CALL and ANALYTIC_ROWS and COMPILED_PIECES:   # one compiled call where it takes the state
        found = _one_call(model, name, h, euler_damping, q, qd, ctrl, qfrc_applied, qacc_warmstart)
        if found is not None and not found[2]:
            return found[:2], found[3]
    inputs = integ.step_inputs(model, None, ctrl, qfrc_applied, None)
    s = _Stepper(model, h, inputs, euler_damping, np.zeros(0), name, True)
    s.constraints.measure = margins                    # the margins (switch_margins, _break_margins) only when asked
    s.constraints.warmstart = qacc_warmstart
    s.constraints.step_planes = True                   # the plane contacts' rows made in the compiled step
    with np.errstate(over="ignore", invalid="ignore"):
        terms = s.constrained_terms(q, qd, np.zeros(0))
    if terms is None:
        return None
    A, B, status = _compiled_step_derivatives(model, StepOptions(name, h, euler_damping), inputs.actuators, q, qd,
                                              None if inputs.actuators is None else ctrl[None],
                                              None if qfrc_applied is None else qfrc_applied[None], terms)
    return None if status[0] else ((A[0], B[0]), s.constraints.margins)


def _one_call(model, name, h, euler_damping, q, qd, ctrl, qfrc_applied, qacc_warmstart=None) -> tuple | None:
    """_compiled_constrained's (A, B, status, margins) of one state (q (nq,), qd (nv,), ctrl (nu,) or None,
    qfrc_applied (nv,) or None, qacc_warmstart (nv,) or None: the solve's start where its cost is lower) or N (q (N, nq),
    ..., ctrl (N, nu), qacc_warmstart (N, nv)), each in one compiled call, a batch's states on
    threads (native.CONSTRAINED_STEP): the contacts, the smooth forces and the solve, terms() and compiled_terms() where
    every row's q-derivative is analytic and no dof moves one -- planes on bodies no dof moves against spheres, boxes
    and capsules (not near upright), sphere and capsule pairs, dim 1 or 3 on the pyramid; hinge and slide limits away
    from their switch; joint equalities; dofs' friction loss -- every contact dof proven still or detected and held, the
    step, and step_derivatives' margins (switch_margins', _break_margins'). status nonzero (each state's) where the
    state is outside that, or near one of terms()' refusals, its A, B and margins undefined (the calls of
    _compiled_constrained then, the NumPy text's seams, name what is wrong); None where the model is outside it
    (_one_call_tables). The same arithmetic as those calls but a geom axis's product (xmat times its axis in the body:
    1e-16)."""
    tables = _one_call_tables(model)
    if tables is None:
        return None
    constraint.prepare_compiled(model)
    one = q.ndim == 1
    fields = native.step_derivative_fields(model, StepOptions(name, h, euler_damping), model.actuators,
                                           None if model.actuators is None else (ctrl[None] if one else ctrl),
                                           None if qfrc_applied is None else (qfrc_applied[None] if one else qfrc_applied))
    fields["qacc_warmstart"] = None if qacc_warmstart is None else (qacc_warmstart[None] if one else qacc_warmstart)
    return native.CONSTRAINED_STEP(model, q, qd, fields, tables)


def _plain_batch(arrays: dict) -> tuple:
    """({name: a copy of x} , N) where every array of arrays (name: (x, size)) is plainly a batch: finite float64
    C-contiguous (N, size) with one N > 0; (None, None) otherwise (validation.states then checks, broadcasts and names
    what is wrong)."""
    n = None
    for x, size in arrays.values():
        if not (type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 2 and x.shape[1] == size and
                x.shape[0] > 0 and x.shape[0] == (n or x.shape[0]) and x.flags.c_contiguous):
            return None, None
        n = x.shape[0]
    if n is None or not all(np.isfinite(x).all() for x, _ in arrays.values()):
        return None, None
    return {key: x.copy() for key, (x, _) in arrays.items()}, n


def _plain_state(model, q, qd, dt, ctrl, qfrc_applied, euler_damping, qacc_warmstart=None):
    """(ctrl, qfrc_applied) of one state whose every argument is plainly well formed (finite float64 C-contiguous arrays
    of the model's sizes, qacc_warmstart's too where given, a float timestep, a bool euler_damping), ctrl zeros where
    the model's actuators are given none; None otherwise (the full path then checks and names what is wrong)."""
    acts = model.actuators
    nu = 0 if acts is None else acts.nu
    plain = [(q, model.nq), (qd, model.nv)] + [(x, size) for x, size in ((ctrl, nu), (qfrc_applied, model.nv),
                                                                         (qacc_warmstart, model.nv)) if x is not None]
    if not (type(dt) is float and 0.0 < dt < np.inf and type(euler_damping) is bool and (acts is not None or ctrl is None)
            and all(type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (size,) and size > 0
                    and x.flags.c_contiguous for x, size in plain)
            and np.isfinite(np.concatenate([x for x, _ in plain])).all()):          # finite: all in one test
        return None
    return (np.zeros(nu) if acts is not None and ctrl is None else ctrl), qfrc_applied


def _constrained_one_state(model, q, qd, dt, integrator, ctrl, qfrc_applied, euler_damping, margins, qacc_warmstart):
    """_compiled_constrained of one _plain_state, without the full path's checks and copies: ((A, B), margins); None
    when it is not plain, or where the kernel declines the state (the full path then checks, names what is wrong, or
    redoes it)."""
    plain = _plain_state(model, q, qd, dt, ctrl, qfrc_applied, euler_damping, qacc_warmstart)
    return None if plain is None else _compiled_constrained(model, integrator, dt, euler_damping, q, qd, *plain, margins,
                                                            qacc_warmstart=qacc_warmstart)


def _compiled_one_state(model, q, qd, dt, integrator, ctrl, qfrc_applied, euler_damping):
    """step_derivatives of one _plain_state with an integrator by its name in one compiled call: (A, B); None
    otherwise, or when the state fails (the full path then checks, names what is wrong, or redoes the state on the
    NumPy text)."""
    plain = _plain_state(model, q, qd, dt, ctrl, qfrc_applied, euler_damping)
    if plain is None or integrator not in native.INTEGRATOR_CODES:
        return None
    inputs = [None if x is None else x[None] for x in plain]
    A, B, status = _compiled_step_derivatives(model, StepOptions(integrator, dt, euler_damping), model.actuators, q, qd,
                                              *inputs)
    return None if status[0] else (A[0], B[0])


def _step_derivatives(model, name, h, euler_damping, q, qd, ctrl, qfrc_applied, act, constraints=False, margins=False,
                      qacc_warmstart=None):
    """step_derivatives of one checked state (the NumPy text): T (2 nv + na, 2 nv + na + nu), the step's tangent map;
    the constraint solves start from qacc_warmstart (nv,) where given and cheaper."""
    inputs = integ.step_inputs(model, None, ctrl, qfrc_applied, None)
    act = np.zeros(0 if model.actuators is None else model.actuators.na) if act is None else act
    s = _Stepper(model, h, inputs, euler_damping, act, name, constraints)
    if s.constraints is not None:
        s.constraints.measure = margins                # the margins (switch_margins, _break_margins) only when asked
        s.constraints.warmstart = qacc_warmstart
    nv, nu, na = model.nv, s.nu, s.na
    E = np.eye(2 * nv + na + nu)                                # d(input) w.r.t. (dq, dqd, dact, dctrl)
    Eq, Ev, Ea, Eu = E[:nv], E[nv:2 * nv], E[2 * nv:2 * nv + na], E[2 * nv + na:]
    with np.errstate(over="ignore", invalid="ignore"):
        if name != "rk4":
            a, aq, av, au, aa, x = s.acceleration(q, qd, name, act)
            qd_next = qd + h * a
            Tv = Ev + h * (aq @ Eq + av @ Ev + au @ Eu + aa @ Ea)
            Ad, Jw = _retraction(model, qd_next, h)
            Tq = Ad @ Eq + Jw @ Tv
            Ta = np.zeros((0, E.shape[1])) if x is None else x.next_a @ Ea + x.next_u @ Eu
        else:                                          # the stages of engine.forward.rk4_stages, with their tangents
            Tq_i, Tv_i, Tk_i, Tact_i, qi, qdi, ki, act_i = Eq, Ev, Ev, Ea, q, qd, qd, act
            sum_k, sum_Tk, sum_Ta = np.zeros(nv), np.zeros_like(Ev), np.zeros_like(Ev)
            sum_r, sum_Tr = np.zeros(na), np.zeros_like(Ea)
            for i, b in enumerate(forward.RK4_WEIGHTS):
                a, aq, av, au, aa, x = s.acceleration(qi, qdi, name, act_i)
                Ta = aq @ Tq_i + av @ Tv_i + au @ Eu + aa @ Tact_i
                sum_k, sum_Tk, sum_Ta = sum_k + b * ki, sum_Tk + b * Tk_i, sum_Ta + b * Ta
                if na:                                 # act_dot_i = r(u, act_i): its tangent r_u du + r_a dact_i
                    r, Tr = s.run.act_dot, x.rate_u @ Eu + x.rate_a[:, None] * Tact_i
                    sum_r, sum_Tr = sum_r + b * r, sum_Tr + b * Tr
                if i < 3:                              # q_i+1 = q (+) h c k_i, qd_i+1 = qd + h c a_i, k_i+1 = dexp^-1(h c k_i) qd_i+1
                    c = forward.RK4_TIMES[i]
                    Ad, Jw = _retraction(model, ki, h * c)
                    theta = h * (c * ki)
                    qi = joints.integrate(model.coords, q[:, None], (c * ki)[:, None], h)[:, 0]
                    qdi = qd + h * c * a
                    Kt, Kv = _dexp_inv_jacobians(model, theta, qdi)
                    Tq_i, Tv_i = Ad @ Eq + Jw @ Tk_i, Ev + h * c * Ta
                    Tk_i = Kv @ Tv_i + Kt @ (h * c * Tk_i)
                    ki = joints.dexp_inv(model.coords, theta[:, None], qdi[:, None])[:, 0]
                    if na:                             # act_i+1 = act + h c act_dot_i (unclamped)
                        act_i, Tact_i = act + h * c * r, Ea + h * c * Tr
            Tv = Ev + h * sum_Ta
            Ad, Jw = _retraction(model, sum_k, h)
            Tq = Ad @ Eq + Jw @ sum_Tk
            Ta = np.zeros((0, E.shape[1]))
            if na:                                     # act' = clamp(act + c sum b act_dot_i)
                c, moving = _activation_step(inputs.actuators, act, sum_r, h)
                Ta = moving[:, None] * (Ea + c[:, None] * sum_Tr)
    T = np.vstack([Tq, Tv, Ta])
    if not np.isfinite(T).all():
        raise InvalidArgumentError(f"the step derivatives are not finite at dt = {h:g} s with {name}: the state or "
                                   "the timestep is too large, or M - h D is singular")
    return T, np.full(4, np.inf) if s.constraints is None else s.constraints.margins
