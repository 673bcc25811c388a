"""MuJoCo's Newton, PGS and CG solvers of the forward constraint problem, one state at a time (engine_solver.c): the
constrained accelerations of the rows physai.engine.constraint builds.

    solve(model, rows, M, qfrc_smooth, ...)       qacc minimising  1/2 |qacc - a0|_M^2 + s(J qacc - aref)  (mj_solNewton)
    solve_pgs(model, rows, M, qfrc_smooth, ...)   the dual forces minimising 1/2 f^T AR f + f^T b on their cones (mj_solPGS)
    noslip(model, rows, M, qfrc_smooth, sol)      sol's friction forces again without R (mj_solNoSlip)
    solve_with(model, rows, M, qfrc_smooth, ...)  the one model.opt.solver names, then noslip: on each island alone
                                                  (physai.engine.island) when model.opt.island
    tolerance_scale(M)                            1 / trace(M): the scale of their tolerances at this state (MuJoCo 4.0)

The cost's pieces along a search direction (PrimalPrepare, PrimalEval), the exact line search (PrimalSearch) and the
Hessian M + J^T D J come in that order. The NumPy text here is the reference; the compiled backend runs the same
functions in C++ (cpp/solver.h):

    compiled_forward                        the kernel constraint_forward (rows, M, c and model.opt.solver) on N states
                                            with their own contacts; rows=True: its rows too, with update's forces,
                                            states and cones' Hessians at its solution (the step's derivatives' solve)

solve_pgs's loop runs in pieces there (pgs_setup, then pgs_extrapolate, a sweep and pgs_advance each iteration, then
pgs_finish), so that a constrained rollout's lanes run the solves of their states together (pgs_together: the one-row
sweeps of several solves interleaved row by row, a row's residual waiting on the force just stored): a schedule, each
solve's arithmetic this text's.

The discrete step's metric with tendon and servo terms: conjugate_gradients (metric_pcg's loop) is compiled in
cpp/forward.h, not solver.h (forward.h's metric_pcg without rows and solver.h's smooth_acceleration with them call it;
solver.h includes forward.h); metric_solve's choice is cpp/solver.h's metric_model, made once a step: M^ and
forward.factored_metric's X + diag(C) on the tree's layout when its tendon and servo terms fit M's pattern (joint-level
servos, one chain's tendons: off_pattern finds none), else on a Model on a chain of every dof on which tree_cholesky
factors densely: other names, the same arithmetic.
"""

import warnings
from dataclasses import dataclass

import numpy as np

from physai import validation
from physai.exceptions import ConvergenceWarning, UnsupportedModelError
from physai.engine import island, native
from physai.engine.model_checks import MINVAL
from physai.engine.primitives import sequential_sum
from physai.engine.constraint import (CONE, CONTACT_ELLIPTIC, CONTACT_PYRAMIDAL, LINEARNEG, LINEARPOS,
                                      QUADRATIC, SATISFIED, Rows, row_groups, rows_transpose_times,
                                      kernel_options, kernel_rows, prepare_compiled, state_forces, update)
from physai.engine.smooth import cholesky_solve, tree_cholesky_solve
from physai.engine.model import Model


# ---------------------------------------------------------------- solving in the metric

def off_pattern(model: Model, M: np.ndarray) -> np.ndarray:
    """(nv, nv) bool: M's nonzero entries outside the tree's pattern (dofs not on one path to the root): none for the
    mass matrix and the continuous steppers' matrices; the discrete step's tendon and servo terms where they couple
    branches or trees (MuJoCo applies them matrix-free)."""
    return (M != 0) & (model.dof_Mmask[:, :, 0] == 0)


def metric_solve(model: Model, M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with M x = b, b (nv,) or (nv, n): tree_cholesky_solve on M's pattern when M fits it, else a dense Cholesky
    (a discrete metric with terms between branches or trees, off_pattern, which the tree's factor would drop)."""
    B = b[:, None] if b.ndim == 1 else b
    if off_pattern(model, M).any():
        x = cholesky_solve(np.repeat(M[:, :, None], B.shape[1], axis=2), B)
    else:
        x = tree_cholesky_solve(model, np.repeat(M[:, :, None], B.shape[1], axis=2), B)
    return x[:, 0] if b.ndim == 1 else x


def metric_pcg(model: Model, M: np.ndarray, backbone: np.ndarray, b: np.ndarray, tolerance: float,
               iterations: int) -> np.ndarray:
    """x (nv,) with M x = b (nv,) by conjugate gradients preconditioned with the backbone's factor (metric_solve), from
    x = 0, until |r|^2 < tolerance^2 |b|^2 or after `iterations` (MuJoCo 4's a0 in the discrete step's metric with
    tendon and actuator terms, which it applies matrix-free: M = backbone + those terms); warns at the cap."""
    x, capped = conjugate_gradients(b, tolerance, iterations, lambda v: M @ v,
                                    lambda r: metric_solve(model, backbone, r))
    if capped is not None:                            # stopped at the cap (MuJoCo's mjWARN_INERTIA)
        warnings.warn(pcg_cap_message(iterations, capped), ConvergenceWarning, stacklevel=2)
    return x


def conjugate_gradients(b: np.ndarray, tolerance: float, iterations: int, times, precondition):
    """(x, capped): x (n,) with A x = b (n,) by conjugate gradients preconditioned with P, times(v) = A v and
    precondition(r) = P^-1 r, from x = 0 until |r|^2 < tolerance^2 |b|^2 or after `iterations`; capped the relative
    residual |r| / |b| when it stopped at the cap, else None (metric_pcg's loop; cpp/forward.h's conjugate_gradients)."""
    x, res = np.zeros_like(b), np.array(b, dtype=float)
    bn = float(res @ res)
    if bn <= MINVAL:
        return x, None
    z = precondition(res)
    p, rz = z.copy(), float(res @ z)
    for _ in range(iterations):
        Ap = times(p)
        pAp = float(p @ Ap)
        if pAp <= 0:                                  # no curvature along p: x is the best there is
            return x, None
        alpha = rz / pAp
        x, res = x + alpha * p, res - alpha * Ap      # x += alpha p, r -= alpha A p
        if float(res @ res) < tolerance * tolerance * bn:
            return x, None
        z = precondition(res)
        rz_new = float(res @ z)
        p, rz = z + rz_new / rz * p, rz_new           # p = z + beta p
    return x, np.sqrt(float(res @ res) / bn)


def pcg_cap_message(iterations: int, residual: float, where: str = "") -> str:
    """The ConvergenceWarning's text when the discrete step's smooth solve stopped at its iteration cap at a relative
    residual |r| / |b| (metric_pcg's; the compiled step's, cpp/forward.h's metric_pcg, with `where` naming the step)."""
    return (f"the discrete step's smooth solve in its metric M + h B + h^2 K ran out of its {iterations} iterations"
            f"{where} at a relative residual {residual:.3g}: its acceleration is under-converged, as MuJoCo's; raise "
            "model.opt.iterations")


def smooth_acceleration(model: Model, M: np.ndarray, qfrc_smooth: np.ndarray, backbone: np.ndarray | None = None,
                        tolerance: float | None = None, iterations: int | None = None) -> np.ndarray:
    """a0 = M^-1 qfrc_smooth (nv,): metric_solve, or metric_pcg to the tolerance (model.opt's unless given) when a
    backbone (the discrete metric's factored part under Newton or CG) is given."""
    if backbone is None:
        return metric_solve(model, M, qfrc_smooth)
    opt = model.opt
    return metric_pcg(model, M, backbone, qfrc_smooth, opt.tolerance if tolerance is None else tolerance,
                      opt.iterations if iterations is None else iterations)


# ---------------------------------------------------------------- the forward problem: Newton's method (mj_solNewton)

@dataclass
class Solution:
    """qacc (nv,), efc_force (nefc,), qfrc_constraint = J^T efc_force (nv,), the Newton iterations it took and the last
    scaled improvement of the cost (MuJoCo's solver_improvement), and whether it met the tolerance."""

    qacc: np.ndarray
    efc_force: np.ndarray
    qfrc_constraint: np.ndarray
    iterations: int
    improvement: float
    converged: bool
    state: np.ndarray


def _total_cost(r: Rows, M, qfrc_smooth, qacc_smooth, qacc):
    """(cost, Jaref, force, state, cone Hessians, M qacc): the primal cost 1/2 (qacc - a0)^T M (qacc - a0) + s(Jaref),
    Jaref = J qacc - aref, with s's forces and states."""
    Jaref = r.J @ qacc - r.aref
    force, state, s, hess = update(r, Jaref, cone_hessian=True)
    Ma = M @ qacc
    gauss = 0.5 * float((Ma - qfrc_smooth) @ (qacc - qacc_smooth))
    return gauss + s, Jaref, force, state, hess, Ma


@dataclass
class _Line:
    """The primal cost along qacc + alpha v, each row's as a polynomial in alpha: quad (nefc, 3) 1/2 D Jaref^2,
    D Jaref Jv, 1/2 D Jv^2 (an elliptic contact's first row: its block's sums), cones {first row: (U0, V0, UU, UV, VV,
    Dm)} of each elliptic contact (U, V: Jaref, Jv scaled by mu and friction; UU, UV, VV their tangential products),
    gauss (1, 2): the Gauss term's linear and quadratic coefficients (MuJoCo's PrimalPrepare)."""

    r: Rows
    Jaref: np.ndarray
    Jv: np.ndarray
    quad: np.ndarray
    cones: dict
    gauss: tuple


def _line(r: Rows, Jaref: np.ndarray, Jv: np.ndarray, gauss: tuple) -> _Line:
    """The polynomials of the primal cost along the search direction (see _Line)."""
    DJ = r.D * Jaref
    quad = np.stack([Jaref * DJ, Jv * DJ, Jv * r.D * Jv], axis=1)
    cones = {}
    for i, dim, mu, friction in _elliptic_contacts(r):
        quad[i] = quad[i:i + dim].sum(axis=0)
        U, V = Jaref[i + 1:i + dim] * friction[:dim - 1], Jv[i + 1:i + dim] * friction[:dim - 1]
        cones[i] = (Jaref[i] * mu, Jv[i] * mu, float(U @ U), float(U @ V), float(V @ V), r.D[i] / (mu * mu * (1 + mu * mu)))
    quad[:, [0, 2]] *= 0.5
    return _Line(r, Jaref, Jv, quad, cones, gauss)


def _elliptic_contacts(r: Rows):
    """(first row, dim, mu, friction) of each elliptic contact's block of rows."""
    i = r.ne + r.nf
    while i < r.nefc:
        if r.type[i] != CONTACT_ELLIPTIC:
            i += 1
            continue
        c = r.id[i]
        yield i, int(r.contact_dim[c]), r.contact_mu[c], r.contact_friction[c]
        i += int(r.contact_dim[c])


def _huber(x, f, Rf, D):
    """The friction-loss cost at x: 1/2 D x^2 inside +-Rf, f (|x| - Rf / 2) outside."""
    return np.where((-Rf < x) & (x < Rf), 0.5 * D * x * x, np.where(x <= -Rf, f * (-0.5 * Rf - x), f * (-0.5 * Rf + x)))


def _huber_change(start, x, f, Rf, D):
    """The friction-loss cost's change from start to x, within a zone without cancellation (MuJoCo's frictionCostDif)."""
    zone = lambda y: np.where((-Rf < y) & (y < Rf), 0, np.where(y <= -Rf, -1, 1))            # noqa: E731
    z0, z = zone(start), zone(x)
    same = np.where(z == 0, 0.5 * D * (x - start) * (x + start), np.where(z < 0, f * (start - x), f * (x - start)))
    return np.where(z0 == z, same, _huber(x, f, Rf, D) - _huber(start, f, Rf, D))


def _cone_zone(N: float, Tsqr: float, mu: float) -> tuple[int, float]:
    """(zone, T) of an elliptic contact at scaled normal N and tangential T^2 = Tsqr: 1 top, 2 bottom, 3 middle."""
    if Tsqr <= 0:
        return (2 if N < 0 else 1), 0.0
    T = float(np.sqrt(Tsqr))
    return (1 if N >= mu * T else 2 if mu * N + T <= 0 else 3), T


def _cone_change(quad: np.ndarray, cone: tuple, alpha: float, mu: float) -> float:
    """cost(alpha) - cost(0) of an elliptic contact from its zones at 0 and at alpha (MuJoCo's ellipticCostDif)."""
    U0, V0, UU, UV, VV, Dm = cone
    zone0, T0 = _cone_zone(U0, UU, mu)
    N = U0 + alpha * V0
    zone, T = _cone_zone(N, UU + alpha * (2 * UV + alpha * VV), mu)
    quadratic = alpha * (alpha * quad[2] + quad[1])
    if (zone0, zone) == (3, 3):      # on the cone both: r - r0 with T - T0 = (T^2 - T0^2) / (T + T0), no cancellation
        r_delta = alpha * V0 - mu * (alpha * (2 * UV + alpha * VV) / (T + T0))
        return 0.5 * Dm * r_delta * (2 * (U0 - mu * T0) + r_delta)
    if (zone0, zone) == (2, 2):
        return alpha * alpha * quad[2] + alpha * quad[1]
    if (zone0, zone) == (3, 2):      # cone to bottom: the quadratic's change plus the gap at 0
        return quadratic + 0.5 * Dm * (mu * U0 + T0) ** 2
    if (zone0, zone) == (2, 3):      # bottom to cone: the quadratic's change less the gap at alpha
        return quadratic - 0.5 * Dm * (mu * N + T) ** 2
    if (zone0, zone) == (1, 2):
        return alpha * alpha * quad[2] + alpha * quad[1] + quad[0]
    if (zone0, zone) == (1, 3):
        return 0.5 * Dm * (N - mu * T) ** 2
    if (zone0, zone) == (3, 1):
        return -0.5 * Dm * (U0 - mu * T0) ** 2
    return -quad[0] if (zone0, zone) == (2, 1) else 0.0


def _cone_derivatives(quad: np.ndarray, cone: tuple, alpha: float, mu: float) -> tuple[float, float]:
    """(d cost / d alpha, d2 cost / d alpha2) of an elliptic contact at alpha, by its zone there."""
    U0, V0, UU, UV, VV, Dm = cone
    N = U0 + alpha * V0
    zone, T = _cone_zone(N, UU + alpha * (2 * UV + alpha * VV), mu)
    if zone == 1:
        return 0.0, 0.0
    if zone == 2:
        return 2 * alpha * quad[2] + quad[1], 2 * quad[2]
    # middle: Dm/2 (N - mu T)^2 with T' = (UV + alpha VV) / T, T'' = VV / T - (UV + alpha VV) T' / T^2
    T1 = (UV + alpha * VV) / T
    T2 = VV / T - (UV + alpha * VV) * T1 / (T * T)
    return Dm * (N - mu * T) * (V0 - mu * T1), Dm * ((V0 - mu * T1) * (V0 - mu * T1) + (N - mu * T) * (-mu * T2))


def _line_point(line: _Line, alpha: float) -> tuple[float, float, float, float]:
    """(alpha, cost(alpha) - cost(0), d cost / d alpha, d2 cost / d alpha2) of the primal cost along the search
    direction (MuJoCo's PrimalEval; a second derivative <= 0, which convexity rules out, is raised to MINVAL)."""
    r, quad, Jaref, Jv = line.r, line.quad, line.Jaref, line.Jv
    ne, nf = r.ne, r.nf
    total = np.array([0.0, line.gauss[0], line.gauss[1]])           # the quadratic terms' sum, shifted by cost(0)
    cost = d1 = d2 = 0.0
    # equality: quadratic
    total[1:] += quad[:ne, 1:].sum(axis=0)
    # friction loss: Huber, cost(x) - cost(start)
    f = slice(ne, ne + nf)
    fl, Rf, D, dir_ = r.frictionloss[f], r.R[f] * r.frictionloss[f], r.D[f], Jv[f]
    x = Jaref[f] + alpha * dir_
    inside = (-Rf < x) & (x < Rf)
    cost += float(np.sum(_huber_change(Jaref[f], x, fl, Rf, D)))
    d1 += float(np.sum(np.where(inside, D * x * dir_, np.where(x <= -Rf, -fl * dir_, fl * dir_))))
    d2 += float(np.sum(np.where(inside, D * dir_ * dir_, 0.0)))
    # limits, frictionless and pyramidal contacts: one-sided quadratics
    one = np.flatnonzero(r.type[ne + nf:] != CONTACT_ELLIPTIC) + ne + nf
    cost0 = np.where(Jaref[one] < 0, quad[one, 0], 0.0)
    on = Jaref[one] + alpha * Jv[one] < 0
    total[0] += float(np.sum((quad[one, 0] - cost0)[on]))
    total[1:] += quad[one[on], 1:].sum(axis=0)
    cost -= float(np.sum(cost0[~on]))
    # elliptic contacts: by zone
    for i, _, mu, _ in _elliptic_contacts(r):
        cost += _cone_change(quad[i], line.cones[i], alpha, mu)
        c1, c2 = _cone_derivatives(quad[i], line.cones[i], alpha, mu)
        d1, d2 = d1 + c1, d2 + c2
    cost += alpha * alpha * total[2] + alpha * total[1] + total[0]
    d1 += 2 * alpha * total[2] + total[1]
    d2 += 2 * total[2]
    return alpha, cost, d1, d2 if d2 > 0 else MINVAL


def _newton_point(line: _Line, p) -> tuple:
    """The line's point at p's Newton step alpha - d1 / d2."""
    return _line_point(line, p[0] - p[2] / p[3])


def _bracket(line: _Line, p, candidates):
    """(p, updated) replaced by the candidate nearest the minimum on p's side (the same sign of d1, a smaller |d1|)
    (MuJoCo's updateBracket)."""
    updated = False
    for c in candidates:
        if (p[2] < 0 and c[2] < 0 and p[2] < c[2]) or (p[2] > 0 and c[2] > 0 and p[2] > c[2]):
            p, updated = c, True
    return p, updated


def _line_search(line: _Line, snorm: float, gtol: float, max_evaluations: int) -> tuple[float, float, int]:
    """(alpha, improvement cost(0) - cost(alpha), status) of MuJoCo's PrimalSearch: one Newton step from 0, Newton steps
    on one side until the derivative changes sign, then the bracket shrunk by Newton steps and midpoints, until
    |d cost / d alpha| < gtol or max_evaluations evaluations of the cost (ls_iterations); status: 0 converged,
    1 no search direction, 2 already optimal, 3 not bracketed, 4 improved without converging, 5 no improvement,
    7 the bracket at rounding (its midpoint)."""
    if snorm < MINVAL:
        return 0.0, 0.0, 1
    p0 = _line_point(line, 0.0)
    p1 = _newton_point(line, p0)
    evaluations = 2
    if abs(p1[2]) < gtol and (p1[0] == 0 or p1[1] < 0):
        return p1[0], -p1[1], 2 if p1[0] == 0 else 0
    # Newton steps on p1's side until the derivative changes sign
    direction = 1 if p1[2] < 0 else -1
    p2 = p0
    while p1[2] * direction <= -gtol and evaluations < max_evaluations:
        p2, p1 = p1, _newton_point(line, p1)
        evaluations += 1
        if abs(p1[2]) < gtol and p1[1] < 0:
            return p1[0], -p1[1], 0
    if evaluations >= max_evaluations:
        return p1[0], -p1[1], 3
    # the bracket [p1, p2]: its Newton points and midpoint as candidates
    p1next, p2next = _newton_point(line, p1), p1
    evaluations += 1
    while evaluations < max_evaluations:
        mid = _line_point(line, 0.5 * (p1[0] + p2[0]))
        evaluations += 1
        candidates = (p1next, p2next, mid)
        converged = [c for c in candidates if abs(c[2]) < gtol]
        if converged:
            best = min(converged, key=lambda c: c[1])
            return best[0], -best[1], 0
        p1, moved1 = _bracket(line, p1, candidates)
        if moved1:
            p1next = _newton_point(line, p1)
            evaluations += 1
        p2, moved2 = _bracket(line, p2, candidates)
        if moved2:
            p2next = _newton_point(line, p2)
            evaluations += 1
        if not (moved1 or moved2):
            return mid[0], -mid[1], 0 if mid[1] < 0 else 7
    for p in (p1, p2) if p1[1] <= p2[1] else (p2, p1):
        if p[1] < 0:
            return p[0], -p[1], 4
    return 0.0, 0.0, 5


def _group_hessian(J: np.ndarray, D: np.ndarray) -> np.ndarray:
    """J^T D J (nc, nc) of a group's quadratic rows J (m, nc), D (m,) in MuJoCo 4's order (cpp/solver.h's hessian and
    add_scaled4): G_ab += (J_ka D_k) J_kb, four rows in one sum, the rest one at a time; its lower triangle is H's."""
    P = (J * D[:, None])[:, :, None] * J[:, None, :]                # (m, nc, nc): each row's (J_ka D_k) J_kb
    full = len(J) - len(J) % 4
    fours = ((P[0:full:4] + P[1:full:4]) + P[2:full:4]) + P[3:full:4]   # four rows summed first, then added in turn
    return sequential_sum(np.concatenate([fours, P[full:]]))


def _hessian(r: Rows, M, state, cone_hessians) -> np.ndarray:
    """M + J^T D J over the rows in their quadratic state, plus J_c^T H_c J_c of each contact on its cone, in the
    compiled twin's order (cpp/solver.h's hessian; elementwise products and sums, not BLAS's kernel order and fused
    multiply-adds): each group of rows on the same columns (row_groups) summed apart (_group_hessian), the groups added
    in turn, then M, then each cone's (J_ai H_ab) J_bj with (a, b) in turn; the lower triangle mirrored."""
    H = np.zeros_like(M)
    groups = row_groups(r)
    for a, b in zip(groups[:-1], groups[1:]):
        rows = a + np.flatnonzero(state[a:b] == QUADRATIC)         # the group's quadratic rows
        cols = np.flatnonzero((r.J[rows] != 0).any(axis=0))        # their columns (zero entries add nothing)
        if len(cols):
            H[np.ix_(cols, cols)] += _group_hessian(r.J[np.ix_(rows, cols)], r.D[rows])
    H = M + H
    for first, Hc in cone_hessians.items():                        # + Jc^T Hc Jc over the contact's columns
        Jc = r.J[first:first + len(Hc)]
        cols = np.flatnonzero((Jc != 0).any(axis=0))
        block, Jc = H[np.ix_(cols, cols)], Jc[:, cols]
        for i, j in np.ndindex(Hc.shape):
            block += (Jc[i, :, None] * Hc[i, j]) * Jc[j]
        H[np.ix_(cols, cols)] = block
    return np.tril(H) + np.tril(H, -1).T


def _primal_start(model: Model, r: Rows, M, qfrc_smooth, warmstart, chosen: bool = False, qacc_smooth=None):
    """(the start qacc, its J qacc - aref, forces, states, cone Hessians and M qacc): the warm start when its primal
    cost is lower than a0's (a0 = M^-1 qfrc_smooth unless given; or `chosen`: already chosen, an island's), else a0
    (MuJoCo's warmstart)."""
    qacc_smooth = metric_solve(model, M, qfrc_smooth) if qacc_smooth is None else qacc_smooth
    if chosen and warmstart is not None:
        qacc = np.array(warmstart, dtype=float)
        return (qacc, *_total_cost(r, M, qfrc_smooth, qacc_smooth, qacc)[1:])
    qacc = qacc_smooth.copy()
    start = _total_cost(r, M, qfrc_smooth, qacc_smooth, qacc)
    if warmstart is not None:
        warm = _total_cost(r, M, qfrc_smooth, qacc_smooth, warmstart)
        if warm[0] < start[0]:
            qacc, start = np.array(warmstart, dtype=float), warm
    return (qacc, *start[1:])


def tolerance_scale(M: np.ndarray) -> float:
    """The solvers' tolerance scale [1 / (kg m^2 | kg)]: 1 / (meaninertia max(1, nv)), meaninertia = trace(M) / nv of
    M (nv, nv) at this state (MuJoCo 4.0; before it, stat.meaninertia at qpos0), scaling the improvements, gradients
    and line search tolerances of Newton, CG and PGS."""
    if M.shape[0] == 0:                           # no dofs, no rows: nothing to scale
        return 1.0
    nv = M.shape[0]
    return 1.0 / (float(np.trace(M)) / nv * nv)   # meaninertia: M's mean diagonal here


def _primal_search(model: Model, r: Rows, M, qfrc_smooth, Jaref, Ma, v, tolerance: float, scale: float):
    """(alpha, improvement, status, J v, M v): _line_search's along v from qacc (J qacc - aref = Jaref, M qacc = Ma), at
    most opt.ls_iterations evaluations, to |d cost / d alpha| < tolerance ls_tolerance |v| / scale."""
    snorm = float(np.linalg.norm(v))
    Jv, Mv = r.J @ v, M @ v
    gauss = (float(v @ Ma) - float(qfrc_smooth @ v), 0.5 * float(v @ Mv))
    line = _line(r, Jaref, Jv, gauss)
    return (*_line_search(line, snorm, tolerance * model.opt.ls_tolerance * snorm / scale, model.opt.ls_iterations),
            Jv, Mv)


def _primal_step(r: Rows, qfrc_smooth, qacc, Ma, Jaref, alpha: float, v, Mv, Jv):
    """(qacc, Ma, Jaref, force, state, cone Hessians, grad) after the step qacc += alpha v, M qacc and J qacc - aref
    carried along it (MuJoCo's Ma += alpha Mv, Jaref += alpha Jv: recomputed, their rounding moved CG's stopping point
    6e-12 in qd where MuJoCo's own moves 2e-13 under a 1-ulp change of qd), then the rows' forces and states and the
    gradient M qacc - qfrc_smooth - J^T force there."""
    qacc, Ma, Jaref = qacc + alpha * v, Ma + alpha * Mv, Jaref + alpha * Jv
    force, state, _, hess = update(r, Jaref, cone_hessian=True)
    return qacc, Ma, Jaref, force, state, hess, Ma - qfrc_smooth - rows_transpose_times(r, force)


def solve(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, warmstart: np.ndarray | None = None,
          tolerance: float | None = None, iterations: int | None = None, scale: float | None = None,
          chosen: bool = False, backbone: np.ndarray | None = None, a0: np.ndarray | None = None) -> Solution:
    """The constrained accelerations: qacc minimising 1/2 |qacc - a0|_M^2 + s(J qacc - aref), a0 = M^-1 qfrc_smooth, by
    Newton's method (Hessian M + J^T D J, MuJoCo's line search: at most opt.ls_iterations evaluations of the cost, to
    |d cost / d alpha| < tolerance ls_tolerance |v| / scale), from the warm start when its cost is lower than a0's.

    Stops as MuJoCo's mj_solNewton does: when the scaled improvement of the line search, the scaled gradient or the
    Newton decrement 1/2 grad H^-1 grad is below the tolerance (model.opt's unless given), scale = tolerance_scale(M)
    (1 / trace(M)), or when the line search improves nothing (alpha = 0); after `iterations` it stops anyway. converged is
    False when it stopped by the iteration limit, or by a line search that ran out of evaluations without improving.
    backbone: the discrete step's factored metric when M has tendon or actuator terms (forward.cg_backbone): a0 then by
    metric_pcg to the tolerance, as MuJoCo 4's (which counts mjWARN_INERTIA at its cap, as solve_cg's), the Hessian M's;
    a0: that solve's result when already made (an island's part of every dof's, _solve_islands: one solve a step)."""
    opt = model.opt
    tolerance = opt.tolerance if tolerance is None else tolerance
    iterations = opt.iterations if iterations is None else iterations
    scale = tolerance_scale(M) if scale is None else scale
    if a0 is None and backbone is not None:
        a0 = smooth_acceleration(model, M, qfrc_smooth, backbone, tolerance, iterations)
    qacc, Jaref, force, state, hess, Ma = _primal_start(model, r, M, qfrc_smooth, warmstart, chosen, a0)
    improvement, it = 0.0, 0
    grad = Ma - qfrc_smooth - rows_transpose_times(r, force)
    gradient = lambda: scale * float(np.linalg.norm(grad))                        # noqa: E731
    # converged before a step: the gap 1/2 grad M^-1 grad and the gradient below the tolerance (a good warm start)
    done = 0.5 * scale * float(grad @ metric_solve(model, M, grad)) < tolerance and gradient() < tolerance
    H = None
    if not done:
        H = _hessian(r, M, state, hess)
        step = cholesky_solve(H[:, :, None], grad[:, None])[:, 0]
        done = gradient() < tolerance and 0.5 * scale * float(grad @ step) < tolerance
    status = 0
    while not done and it < iterations:
        # the line search along the Newton direction, bounded by ls_iterations evaluations of the cost
        v = -step
        alpha, ls_improvement, status, Jv, Mv = _primal_search(model, r, M, qfrc_smooth, Jaref, Ma, v, tolerance, scale)
        if alpha == 0:                                                # no improvement along v: stop
            break
        qacc, Ma, Jaref, force, state, hess, grad = _primal_step(r, qfrc_smooth, qacc, Ma, Jaref, alpha, v, Mv, Jv)
        improvement = scale * ls_improvement
        it += 1
        done = (0 < improvement < tolerance) or gradient() < tolerance
        if done:                                                      # H and the decrement only when still going
            break
        H = _hessian(r, M, state, hess)
        step = cholesky_solve(H[:, :, None], grad[:, None])[:, 0]
        done = max(0.0, 0.5 * scale * float(grad @ step)) < tolerance  # Newton's predicted improvement
    # converged: stopped by a tolerance, or with no descent left (no search direction, or already optimal along it)
    converged = done or status in (1, 2)
    return Solution(qacc, force, rows_transpose_times(r, force), it, improvement, bool(converged), state)


# ---------------------------------------------------------------- the primal problem by conjugate gradients (mj_solCG)

def _hager_zhang(search, grad, grad_old, Mgrad, Mgrad_old) -> float:
    """The conjugate direction's beta (Hager-Zhang, M-preconditioned; 0: restart when d.y < MINVAL), bounded below by
    -1 / (|d| min(0.01, |grad|)) (mj_solPrimal's update)."""
    y, My = grad - grad_old, Mgrad - Mgrad_old
    d_dot_y = float(search @ y)
    if d_dot_y < MINVAL:
        return 0.0
    beta = (float(y @ Mgrad) - 2 * (float(y @ My) / d_dot_y) * float(search @ grad)) / d_dot_y
    eta = -1.0 / max(MINVAL, float(np.linalg.norm(search)) * min(0.01, float(np.linalg.norm(grad))))
    return max(eta, beta)


def solve_cg(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, warmstart: np.ndarray | None = None,
             tolerance: float | None = None, iterations: int | None = None, scale: float | None = None,
             chosen: bool = False, backbone: np.ndarray | None = None, a0: np.ndarray | None = None) -> Solution:
    """The constrained accelerations of solve by MuJoCo's conjugate gradients (mj_solCG): the same primal cost, start
    and line search, along directions -M^-1 grad + beta d (Hager-Zhang). Stops when the gap 1/2 grad M^-1 grad is
    below the tolerance at the start, then when the scaled improvement or gradient is, scale = tolerance_scale(M)
    (1 / trace(M)), or when the line search improves nothing; after `iterations` anyway.

    backbone: the discrete step's factored metric (forward.factored_metric) when M has tendon or actuator terms that
    MuJoCo 4 applies matrix-free: a0 then by metric_pcg, the preconditioner M^-1 becomes backbone^-1 (products,
    gradient, line search and beta stay in M), and the start test needs the scaled gradient below the tolerance too.
    a0: M^-1 qfrc_smooth when already made (an island's part of every dof's, _solve_islands: one solve a step)."""
    opt = model.opt
    tolerance = opt.tolerance if tolerance is None else tolerance
    iterations = opt.iterations if iterations is None else iterations
    scale = tolerance_scale(M) if scale is None else scale
    P = M if backbone is None else backbone                               # the preconditioner's metric
    M_solve = lambda x: metric_solve(model, P, x)                                     # noqa: E731
    if a0 is None:
        a0 = smooth_acceleration(model, M, qfrc_smooth, backbone, tolerance, iterations)
    qacc, Jaref, force, state, _, Ma = _primal_start(model, r, M, qfrc_smooth, warmstart, chosen, a0)
    grad = Ma - qfrc_smooth - rows_transpose_times(r, force)
    Mgrad = M_solve(grad)
    # converged before a step: the gap 1/2 grad M^-1 grad below the tolerance (a good warm start); in the discrete
    # step's matrix-free metric the scaled gradient too (measured: MuJoCo 4 iterates at a gap of 3e-9 < 1e-8)
    done = max(0.0, 0.5 * scale * float(grad @ Mgrad)) < tolerance and (
        backbone is None or scale * float(np.linalg.norm(grad)) < tolerance)
    search, improvement, it, status = -Mgrad, 0.0, 0, 0
    while not done and it < iterations:
        alpha, ls_improvement, status, Jv, Mv = _primal_search(model, r, M, qfrc_smooth, Jaref, Ma, search, tolerance,
                                                               scale)
        if alpha == 0:                                                # no improvement along the direction: stop
            break
        grad_old, Mgrad_old = grad, Mgrad
        qacc, Ma, Jaref, force, state, _, grad = _primal_step(r, qfrc_smooth, qacc, Ma, Jaref, alpha, search, Mv, Jv)
        Mgrad = M_solve(grad)
        improvement = scale * ls_improvement
        it += 1
        done = (0 < improvement < tolerance) or scale * float(np.linalg.norm(grad)) < tolerance
        if not done:                                                  # d = -M^-1 grad + beta d
            search = -Mgrad + _hager_zhang(search, grad, grad_old, Mgrad, Mgrad_old) * search
    converged = done or status in (1, 2)
    return Solution(qacc, force, rows_transpose_times(r, force), it, improvement, bool(converged), state)


# ---------------------------------------------------------------- the dual problem: PGS (mj_solPGS)

def _pcg32(state: int) -> tuple[int, int]:
    """(next state, 32-bit draw) of MuJoCo's PCG32 generator with increment 1 (pcg32_next)."""
    mask = (1 << 64) - 1
    xorshifted = (((state >> 18) ^ state) >> 27) & 0xFFFFFFFF
    rot = state >> 59
    return (state * 6364136223846793005 + 1) & mask, ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF


def _shuffle(order: list, state: int) -> int:
    """Fisher-Yates shuffle of order in place by PCG32 draws (shuffle_int); returns the generator's state."""
    for i in range(len(order) - 1, 0, -1):
        state, draw = _pcg32(state)
        j = draw % (i + 1)
        order[i], order[j] = order[j], order[i]
    return state


def _dual_problem(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray,
                  M_delassus: np.ndarray | None = None) -> tuple:
    """(a0 = M^-1 qfrc_smooth, A = J M^-1 J^T (nefc, nefc) symmetrized, b = J a0 - aref) of the dual problem; A in
    M_delassus instead when given (the discrete step's noslip: forward.cg_backbone)."""
    qacc_smooth = metric_solve(model, M, qfrc_smooth)
    A = r.J @ metric_solve(model, M if M_delassus is None else M_delassus, r.J.T)
    return qacc_smooth, 0.5 * (A + A.T), r.J @ qacc_smooth - r.aref


def _pgs_blocks(r: Rows) -> list:
    """(first row, dim) of each block the dual solver visits: one row, or an elliptic contact's dim rows."""
    blocks, i = [], 0
    while i < r.nefc:
        dim = int(r.contact_dim[r.id[i]]) if r.type[i] == CONTACT_ELLIPTIC else 1
        blocks.append((i, dim))
        i += dim
    return blocks


def _project_ellipsoid(t: np.ndarray, normal: float, mu: np.ndarray, feasible: bool) -> np.ndarray:
    """Tangential forces t scaled onto sum (t_j / mu_j)^2 = normal^2 (when feasible: only if outside) (projectEllipsoid)."""
    s = float(np.sum(t * t / (mu * mu)))
    if not feasible or s > normal * normal:
        return t * np.sqrt(normal * normal / max(MINVAL, s))
    return t


def _project_cone(r: Rows, force: np.ndarray, blocks: list) -> None:
    """force projected in place: friction loss into +-frictionloss, limits and contacts onto their cones (projectCone)."""
    f = slice(r.ne, r.ne + r.nf)
    force[f] = np.clip(force[f], -r.frictionloss[f], r.frictionloss[f])
    for i, dim in blocks:
        if i < r.ne + r.nf:
            continue
        if dim == 1 or force[i] < 0:                                  # non-negative normal (a negative one: all zero)
            force[i:i + dim] = max(force[i], 0.0) if dim == 1 else 0.0
        else:
            mu = r.contact_friction[r.id[i]][:dim - 1]
            force[i + 1:i + dim] = _project_ellipsoid(force[i + 1:i + dim], force[i], mu, True)


def _not_positive_definite(A: np.ndarray) -> bool:
    """Whether A (n, n) is not positive definite to MuJoCo's 1e-10: its determinant below it for n <= 3 (mju_QCQP2,
    mju_QCQP3), else a pivot of its Cholesky factor below it (mju_QCQP's mju_cholFactor rank < n)."""
    n = len(A)
    if n <= 3:
        return np.linalg.det(A) < 1e-10
    L = np.zeros_like(A)
    for j in range(n):                                                # pivot t = A_jj - L_j L_j^T
        t = A[j, j] - float(L[j, :j] @ L[j, :j])
        if t < 1e-10:
            return True
        L[j, j] = np.sqrt(t)
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return False


def _qcqp(A: np.ndarray, b: np.ndarray, d: np.ndarray, radius: float) -> tuple[np.ndarray, bool]:
    """(x, on the constraint) minimising 1/2 x^T A x + x^T b with sum (x_i / d_i)^2 <= radius^2, by Newton's method on
    the multiplier la of (A + la) x = -b in the scaled x / d (mju_QCQP2, mju_QCQP3, mju_QCQP: 20 steps, 1e-10 bounds)."""
    As, bs = A * np.outer(d, d), b * d
    la, v = 0.0, np.zeros(len(b))
    for _ in range(20):
        Ala = As + la * np.eye(len(b))
        if _not_positive_definite(Ala):                               # not positive definite: no friction
            return np.zeros(len(b)), False
        P = np.linalg.inv(Ala)
        v = -P @ bs
        val = float(v @ v) - radius * radius                        # |v|^2 - r^2: inside, or on the constraint
        if val < 1e-10:
            break
        delta = val / (2.0 * float(v @ P @ v))                      # Newton step on la: -val / (d val / d la)
        if delta < 1e-10:
            break
        la += delta
    return v * d, la != 0


def _pgs_elliptic(r: Rows, force: np.ndarray, i: int, dim: int, A: np.ndarray, res: np.ndarray, old: np.ndarray,
                  ARinv: float) -> None:
    """An elliptic contact's block updated in place: the normal alone (zero normal) or along the force's ray, then the
    tangential forces by the QCQP on the friction ellipsoid at the new normal (mj_solPGS's elliptic update)."""
    mu = r.contact_friction[r.id[i]][:dim - 1]
    if force[i] < MINVAL:                                             # normal update: f_n -= res_n / AR_nn, f_n >= 0
        force[i] = max(0.0, force[i] - res[0] * ARinv)
        force[i + 1:i + dim] = 0.0
    else:                                                             # ray update: f += x f, x = -f.res / f^T A f
        v = force[i:i + dim].copy()
        denom = float(v @ A @ v)
        if denom >= MINVAL:
            x = -float(v @ res) / denom
            if force[i] + x * v[0] < 0:
                x = -v[0] / force[i]
            force[i:i + dim] += x * v
    # friction at a fixed normal: Ac = A_tt, bc = res_t - A_tt old_t + A_tn (f_n - old_n)
    Ac = A[1:, 1:]
    bc = res[1:] - Ac @ old[1:] + A[1:, 0] * (force[i] - old[0])
    if force[i] < MINVAL:
        force[i + 1:i + dim] = 0.0
        return
    v, active = _qcqp(Ac, bc, mu, force[i])
    force[i + 1:i + dim] = _project_ellipsoid(v, force[i], mu, False) if active else v


def _pgs_sweep(r: Rows, AR: np.ndarray, ARinv: np.ndarray, b: np.ndarray, force: np.ndarray, blocks: list,
               order: list) -> float:
    """One Gauss-Seidel sweep over the blocks in `order`, each minimising 1/2 f^T AR f + f^T b over its own forces and
    projected on its set; a block whose cost rises by more than 1e-10 keeps its old forces. Returns the improvement."""
    improvement = 0.0
    for k in order:
        i, dim = blocks[k]
        res = b[i:i + dim] + AR[i:i + dim] @ force                    # the residual AR f + b of the block
        old = force[i:i + dim].copy()
        if dim == 1:                                                  # one row: f -= res / AR_ii, then clamped
            force[i] -= res[0] * ARinv[i]
            if r.ne <= i < r.ne + r.nf:
                force[i] = min(max(force[i], -r.frictionloss[i]), r.frictionloss[i])
            elif i >= r.ne + r.nf:
                force[i] = max(force[i], 0.0)
            A = np.array([[1.0 / ARinv[i]]])
        else:
            A = AR[i:i + dim, i:i + dim]
            _pgs_elliptic(r, force, i, dim, A, res, old, ARinv[i])
        # the cost's change 1/2 delta^T A delta + delta^T res, undone when positive
        delta = force[i:i + dim] - old
        change = 0.5 * float(delta @ A @ delta) + float(delta @ res) if dim > 1 else \
            0.5 * delta[0] * delta[0] * A[0, 0] + delta[0] * res[0]
        if change > 1e-10:
            force[i:i + dim] = old
            change = 0.0
        improvement -= change
    return improvement


def _dual_state(r: Rows, force: np.ndarray, blocks: list) -> np.ndarray:
    """MuJoCo's efc_state of dual forces (dualState): friction loss at a bound linear (of the opposite sign to the
    primal's), limits and pyramidal rows quadratic when pushing, elliptic contacts by the zone of (f_n / mu, f_t / friction)."""
    state = np.full(r.nefc, QUADRATIC)
    f = slice(r.ne, r.ne + r.nf)
    state[f] = np.where(force[f] <= -r.frictionloss[f], LINEARPOS, np.where(force[f] >= r.frictionloss[f], LINEARNEG,
                                                                            QUADRATIC))
    for i, dim in blocks:
        if i < r.ne + r.nf:
            continue
        if dim == 1:
            state[i] = SATISFIED if force[i] <= 0 else QUADRATIC
            continue
        c = r.id[i]
        mu, N = r.contact_mu[c], force[i] / r.contact_mu[c]
        T = float(np.linalg.norm(force[i + 1:i + dim] / r.contact_friction[c][:dim - 1]))
        state[i:i + dim] = SATISFIED if mu * N >= T else QUADRATIC if N + mu * T <= 0 else CONE
    return state


def _pgs_start(r: Rows, AR: np.ndarray, b: np.ndarray, warmstart: np.ndarray, chosen: bool) -> np.ndarray:
    """The rows' forces at J warmstart - aref, zero when their dual cost f^T b + 1/2 f^T AR f is positive (unless
    `chosen`: an island's, whose start the whole problem chose)."""
    force = update(r, r.J @ warmstart - r.aref)[0].copy()
    if not chosen and float(force @ b) + 0.5 * float(force @ AR @ force) > 0:
        force[:] = 0.0
    return force


def solve_pgs(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, warmstart: np.ndarray | None = None,
              tolerance: float | None = None, iterations: int | None = None, scale: float | None = None,
              chosen: bool = False) -> Solution:
    """The constrained accelerations by MuJoCo's projected Gauss-Seidel on the dual problem (mj_solPGS): the forces f
    (nefc,) minimising 1/2 f^T AR f + f^T b, AR = J M^-1 J^T + diag(R), b = J a0 - aref, a0 = M^-1 qfrc_smooth,
    f within each row's set (friction loss +-frictionloss, limits and contacts >= 0, elliptic contacts in their cone);
    then qacc = a0 + M^-1 J^T f (mj_dualFinish).

    Each iteration: Nesterov's extrapolation beta = (k - 1) / (k + 2) projected on the sets (k reset to 0 when the
    sweep's correction opposes it, O'Donoghue-Candes), then one sweep over the blocks in MuJoCo's PCG32 order (a
    fixed seed, reshuffled every sweep). Stops when the sweep's improvement, scaled by tolerance_scale(M), is below the
    tolerance, or after `iterations` sweeps (converged False). The warm start (nv,) gives the forces of the rows at
    J warmstart - aref, kept when their dual cost is <= 0 (None: zero forces, MuJoCo's cold start)."""
    opt = model.opt
    tolerance = opt.tolerance if tolerance is None else tolerance
    iterations = opt.iterations if iterations is None else iterations
    nefc = r.nefc
    # AR = J M^-1 J^T + R, b = J a0 - aref
    qacc_smooth, A, b = _dual_problem(model, r, M, qfrc_smooth)
    AR = A + np.diag(r.R)
    force = np.zeros(nefc)
    if warmstart is not None:                                         # the rows' forces at the warm start, if cost <= 0
        force = _pgs_start(r, AR, b, warmstart, chosen)
    scale = tolerance_scale(M) if scale is None else scale
    ARinv = 1.0 / np.diag(AR)
    blocks = _pgs_blocks(r)
    order, rng = list(range(len(blocks))), _pcg32(0)[0]             # MuJoCo's seed: state 0, one draw
    previous, k, it, improvement = force.copy(), 0, 0, 0.0
    while it < iterations:
        # Nesterov: f += beta (f - f_prev), projected; f_prev the value before
        beta = (k - 1) / (k + 2) if it > 0 else 0.0
        if beta > 0:
            force, previous = force + beta * (force - previous), force
            _project_cone(r, force, blocks)
        else:
            previous = force.copy()
        momentum = force.copy()
        rng = _shuffle(order, rng)
        improvement = scale * _pgs_sweep(r, AR, ARinv, b, force, blocks, order)
        # restart when the sweep's correction opposes the extrapolation
        restart = it > 0 and float((force - momentum) @ (momentum - previous)) < 0
        k = 0 if restart else k + 1
        it += 1
        if improvement < tolerance:
            break
    # qacc = a0 + M^-1 J^T f
    qfrc = rows_transpose_times(r, force)
    qacc = qacc_smooth + metric_solve(model, M, qfrc)
    return Solution(qacc, force, qfrc, it, improvement, improvement < tolerance, _dual_state(r, force, blocks))


# ---------------------------------------------------------------- noslip: the friction forces again (mj_solNoSlip)

def _friction_change(A: np.ndarray, force: np.ndarray, old: np.ndarray, res: np.ndarray) -> float:
    """The cost's change 1/2 delta^T A delta + delta^T res of a block's new forces (in place), which keeps its old forces
    when the change is above 1e-10 (MuJoCo's costChange)."""
    delta = force - old
    change = 0.5 * float(delta @ A @ delta) + float(delta @ res)
    if change > 1e-10:
        force[:] = old
        return 0.0
    return change


def _friction_block(A: np.ndarray, first: int, n: int) -> np.ndarray:
    """A's diagonal block of rows first..first + n, its diagonal at least 1e-10 (extractBlock without R)."""
    block = A[first:first + n, first:first + n].copy()
    block[np.diag_indices(n)] = np.maximum(1e-10, np.diag(block))
    return block


def _noslip_pyramid(A: np.ndarray, b: np.ndarray, force: np.ndarray, j: int) -> float:
    """A pair of opposing pyramid edges j, j + 1 at a fixed sum 2 mid: f = mid +- y minimising the cost over
    y in [-mid, mid] (K1 y + K0 = 0); returns the cost's change."""
    res = b[j:j + 2] + A[j:j + 2] @ force
    old = force[j:j + 2].copy()
    Ac = _friction_block(A, j, 2)
    bc = res - Ac @ old
    mid, K1 = 0.5 * (old[0] + old[1]), Ac[0, 0] + Ac[1, 1] - Ac[0, 1] - Ac[1, 0]
    if K1 < MINVAL:                                                   # guard against Ac = 0
        force[j:j + 2] = mid
    else:                                                             # y = -K0 / K1, clamped to [-mid, mid]
        y = min(max(-(mid * (Ac[0, 0] - Ac[1, 1]) + bc[0] - bc[1]) / K1, -mid), mid)
        force[j:j + 2] = (mid + y, mid - y)
    return _friction_change(Ac, force[j:j + 2], old, res)


def _noslip_ellipse(r: Rows, A: np.ndarray, b: np.ndarray, force: np.ndarray, i: int, dim: int) -> float:
    """An elliptic contact's tangential forces at its normal force: the QCQP on its friction ellipsoid (zero at a zero
    normal); returns the cost's change."""
    t = slice(i + 1, i + dim)
    res = b[t] + A[t] @ force
    old = force[t].copy()
    Ac = _friction_block(A, i + 1, dim - 1)
    if force[i] < MINVAL:
        force[t] = 0.0
    else:
        mu = r.contact_friction[r.id[i]][:dim - 1]
        v, active = _qcqp(Ac, res - Ac @ old, mu, force[i])
        force[t] = _project_ellipsoid(v, force[i], mu, False) if active else v
    return _friction_change(Ac, force[t], old, res)


def _friction_contacts(r: Rows) -> list:
    """(first row, dim) of each contact with friction: a pyramidal one's 2 (dim - 1) rows, an elliptic one's dim."""
    contacts, i = [], r.ne + r.nf
    while i < r.nefc:
        if r.type[i] not in (CONTACT_PYRAMIDAL, CONTACT_ELLIPTIC):
            i += 1
            continue
        dim = int(r.contact_dim[r.id[i]])
        contacts.append((i, dim))
        i += 2 * (dim - 1) if r.type[i] == CONTACT_PYRAMIDAL else dim
    return contacts


def _noslip_sweep(r: Rows, A: np.ndarray, Ainv: np.ndarray, b: np.ndarray, force: np.ndarray, blocks: list) -> float:
    """One noslip sweep in row order: friction loss f -= res / A_ii clamped to +-frictionloss, then each contact's
    friction (pyramid edge pairs, or the elliptic block), res = A f + b without R; returns the improvement."""
    improvement = 0.0
    for i in range(r.ne, r.ne + r.nf):                                # dry friction
        res = b[i] + float(A[i] @ force)
        old = force[i]
        force[i] = min(max(force[i] - res * Ainv[i], -r.frictionloss[i]), r.frictionloss[i])
        delta = force[i] - old
        improvement -= 0.5 * delta * delta / Ainv[i] + delta * res
    for i, dim in blocks:                                             # contact friction
        if r.type[i] == CONTACT_PYRAMIDAL:
            for j in range(i, i + 2 * (dim - 1), 2):
                improvement -= _noslip_pyramid(A, b, force, j)
        else:
            improvement -= _noslip_ellipse(r, A, b, force, i, dim)
    return improvement


def noslip(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, solution: Solution,
           scale: float | None = None, M_delassus: np.ndarray | None = None) -> Solution:
    """The solution with its friction forces solved again without the regulariser R (MuJoCo's mj_solNoSlip, after every
    solver when opt.noslip_iterations > 0): Gauss-Seidel sweeps on 1/2 f^T A f + f^T b, A = J M^-1 J^T, over the
    friction-loss rows and the contacts' friction at their normal forces, until the sweep's improvement scaled by
    tolerance_scale(M) (the first sweep's plus 1/2 sum R f^2) is below opt.noslip_tolerance, at most
    opt.noslip_iterations sweeps; then qacc = a0 + M^-1 J^T f (mj_dualFinish). Its iterations add to the solver's;
    stopped at its limit, the solution is not converged and its improvement is the last sweep's (the warning's).
    M_delassus: A's metric when not M (MuJoCo 4's discrete step after Newton or CG: forward.cg_backbone), a0 and
    qacc still in M."""
    qacc_smooth, A, b = _dual_problem(model, r, M, qfrc_smooth, M_delassus)
    force = solution.efc_force.copy()
    Ainv = 1.0 / np.maximum(MINVAL, np.diag(A))
    blocks, it, improvement = _friction_contacts(r), 0, 0.0
    scale = tolerance_scale(M) if scale is None else scale
    while it < model.opt.noslip_iterations:
        improvement = 0.5 * float(force @ (r.R * force)) if it == 0 else 0.0   # the cost without R at the start
        improvement = scale * (improvement + _noslip_sweep(r, A, Ainv, b, force, blocks))
        it += 1
        if improvement < model.opt.noslip_tolerance:
            break
    qfrc = rows_transpose_times(r, force)
    qacc = qacc_smooth + metric_solve(model, M, qfrc)
    done = improvement < model.opt.noslip_tolerance                    # else stopped at its limit
    return Solution(qacc, force, qfrc, solution.iterations + it, solution.improvement if done else improvement,
                    solution.converged and done, _dual_state(r, force, _pgs_blocks(r)))


def solve_with(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, warmstart: np.ndarray | None = None,
               tolerance: float | None = None, iterations: int | None = None,
               noslip_metric: np.ndarray | None = None, backbone: np.ndarray | None = None,
               inertia: np.ndarray | None = None) -> Solution:
    """The solver model.opt.solver names ("newton": solve, "cg": solve_cg, "pgs": solve_pgs) on the rows r, then noslip
    when opt.noslip_iterations > 0 (MuJoCo's mj_fwdConstraint): on each island (physai.engine.island) by itself when
    opt.island, else on all rows at once (as is one island over every dof: the same problem, without the copies).
    noslip_metric: the metric of noslip's Delassus matrix when not M (noslip's M_delassus); backbone: solve's and solve_cg's;
    inertia: the mass matrix whose trace scales the tolerances when M is not it (the discrete step's metric)."""
    if model.opt.island and r.nefc:
        parts = island.partition(model, r, off_pattern(model, M))
        if len(parts) != 1 or len(parts[0].dofs) < model.nv:
            return _solve_islands(model, r, M, qfrc_smooth, warmstart, tolerance, iterations, parts, noslip_metric,
                                  backbone, inertia)
    scale = None if inertia is None else tolerance_scale(inertia)
    return _run_solver(model, r, M, qfrc_smooth, warmstart, tolerance, iterations, scale, False, noslip_metric, backbone)


def _run_solver(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, warmstart, tolerance, iterations,
                scale: float | None, chosen: bool, noslip_metric: np.ndarray | None = None,
                backbone: np.ndarray | None = None, a0: np.ndarray | None = None) -> Solution:
    """The solver model.opt.solver names on the rows r with the tolerance scale (None: tolerance_scale(M)) and a start
    already chosen or not, then noslip when opt.noslip_iterations > 0; without rows no solver runs. a0: Newton's and
    CG's M^-1 qfrc_smooth when already made (an island's)."""
    if r.nefc == 0:
        return _solve_without_rows(model, M, qfrc_smooth, backbone, tolerance, iterations)
    if model.opt.solver == "cg":
        solution = solve_cg(model, r, M, qfrc_smooth, warmstart, tolerance, iterations, scale, chosen, backbone, a0)
    elif model.opt.solver == "pgs":
        solution = solve_pgs(model, r, M, qfrc_smooth, warmstart, tolerance, iterations, scale, chosen)
    else:
        solution = solve(model, r, M, qfrc_smooth, warmstart, tolerance, iterations, scale, chosen, backbone, a0)
    if model.opt.noslip_iterations > 0:
        return noslip(model, r, M, qfrc_smooth, solution, scale, noslip_metric)
    return solution


#: rows are stiff where a quadratic row's D exceeds this times M's largest diagonal entry (a pyramid at friction 0,
#: which MuJoCo raises to 1e-5: D = 1 / (2 mu^2 R) ~ 6e11); physai.derivatives.STIFF_ROWS is the same bound
STIFF_ROWS = 1e6


def balanced_constraint_force(r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, solution: Solution) -> np.ndarray:
    """qfrc_constraint (nv,) for the steps that solve (M - h D) a = qfrc_smooth + qfrc_constraint (implicit,
    implicitfast, Euler with damping): solution's J^T efc_force, and where rows are stiff (STIFF_ROWS) that plus the
    balance's residual M qacc - qfrc_smooth - J^T efc_force projected on the quadratic rows' span (least squares, as
    physai.derivatives' optimum forces). -D (J qacc - aref) keeps J qacc's rounding times D: 1e-3 N on a frictionless
    pyramid, 7e-6 m/s in qd after one implicit step (mj_step's own moves by that with its warm start). The solver's
    qacc is kept: equal in exact arithmetic, this is (M - h D)^-1 M qacc there."""
    qfrc = solution.qfrc_constraint
    quadratic = np.flatnonzero(solution.state == QUADRATIC) if len(solution.state) == r.nefc else np.zeros(0, int)
    if not len(quadratic) or r.D[quadratic].max() <= STIFF_ROWS * np.abs(np.diag(M)).max():
        return qfrc
    Jq = r.J[quadratic]
    residual = M @ solution.qacc - qfrc_smooth - qfrc                        # the optimum's balance: zero exactly
    return qfrc + Jq.T @ np.linalg.lstsq(Jq.T, residual, rcond=None)[0]     # its part in the quadratic rows' span


def _solve_without_rows(model: Model, M: np.ndarray, qfrc_smooth: np.ndarray, backbone: np.ndarray | None = None,
                        tolerance: float | None = None, iterations: int | None = None) -> Solution:
    """No rows (nefc = 0, mj_fwdConstraint's early return): qacc = a0 = M^-1 qfrc_smooth (nv,) (smooth_acceleration),
    no iterations, no improvement, converged (MuJoCo's solver_niter 0)."""
    qacc = smooth_acceleration(model, M, qfrc_smooth, backbone, tolerance, iterations)
    return Solution(qacc, np.zeros(0), np.zeros(model.nv), 0, 0.0, True, np.zeros(0, dtype=int))


def _island_start(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, warmstart,
                  qacc_smooth: np.ndarray | None = None) -> np.ndarray | None:
    """The start every island continues from, chosen on all rows (MuJoCo's warmstart): Newton and CG the warm start
    when its primal cost is lower than a0's, else a0; PGS the warm start unless its forces' dual cost is positive
    (None: zero forces)."""
    if warmstart is None:
        return None
    if model.opt.solver != "pgs":
        return _primal_start(model, r, M, qfrc_smooth, warmstart, False, qacc_smooth)[0]
    _, A, b = _dual_problem(model, r, M, qfrc_smooth)
    return warmstart if _pgs_start(r, A + np.diag(r.R), b, warmstart, False).any() else None


def _solve_islands(model: Model, r: Rows, M: np.ndarray, qfrc_smooth: np.ndarray, warmstart, tolerance,
                   iterations, parts: list, noslip_metric: np.ndarray | None = None,
                   backbone: np.ndarray | None = None, inertia: np.ndarray | None = None) -> Solution:
    """solve_with on each island of parts (island.partition) alone (mj_fwdConstraint with islands): its rows, its dofs'
    qfrc_smooth and start (zero elsewhere, so every other dof stays exactly at zero), its own scale 1 / trace(M_island),
    iteration count and stopping test, then its own noslip; dofs in no island keep a0. The Solution's iterations and
    improvement are the largest over the islands (MuJoCo reports them per island), converged whether every island
    converged. With a backbone a0 (metric_pcg, which warns at its cap) is solved once on every dof and each island takes
    its part, as MuJoCo's islands take qacc_smooth's (one mjWARN_INERTIA a step, not one more per island)."""
    qacc = smooth_acceleration(model, M, qfrc_smooth, backbone, tolerance, iterations)
    a0 = None if backbone is None else qacc.copy()     # metric_pcg's a0, kept for the islands (qacc is overwritten)
    start = _island_start(model, r, M, qfrc_smooth, warmstart, qacc if backbone is not None else None)
    force, state = np.zeros(r.nefc), np.zeros(r.nefc, dtype=int)
    iterations_, improvement, converged = 0, 0.0, True
    for part in parts:
        rows, mask = island.island_rows(r, part), np.zeros(model.nv)
        mask[part.dofs] = 1.0
        scale = 1.0 / float(np.sum(np.diag(M if inertia is None else inertia)[part.dofs]))
        warm = None if start is None else start * mask
        sol = _run_solver(model, rows, M, qfrc_smooth * mask, warm, tolerance, iterations, scale, True, noslip_metric,
                          backbone, None if a0 is None else a0 * mask)
        qacc[part.dofs], force[part.rows], state[part.rows] = sol.qacc[part.dofs], sol.efc_force, sol.state
        iterations_, improvement = max(iterations_, sol.iterations), max(improvement, sol.improvement)
        converged = converged and sol.converged
    return Solution(qacc, force, rows_transpose_times(r, force), iterations_, improvement, converged, state)


# ---------------------------------------------------------------- the compiled kernel (cpp/solver.h)

def _forward_options(model: Model, options: tuple) -> tuple:
    """constraint_forward's options as kernel_options, with its qacc_warmstart (nv,) or (N, nv) checked (the named error
    of a non-finite start or a wrong shape) and made float64 in C order."""
    contacts, active, warm, *rest = options
    if warm is not None:
        (warm,), batch = validation.states(qacc_warmstart=(warm, model.nv))
        warm = np.ascontiguousarray(warm[:, 0] if batch is None else warm.T)
    return (*kernel_options(model, (contacts, active)), warm, *rest)


_FORWARD = native.kernel("constraint_forward", options={"constraint": _forward_options})


def compiled_forward(model: Model, q, qd, tau, contacts, eq_active, warmstart, tolerance: float, iterations: int,
                     balanced: bool = False, rows: bool = False, own_force: bool = False, discrete=None, front=None):
    """solve() of one state or N on the compiled backend (rows, M, c and Newton's method in C++): (qacc, qfrc_constraint,
    efc_force (a list of N), iterations, improvement, converged (arrays of N)); qacc, qfrc_constraint (nv,) or (N, nv) as
    q, qd and tau; warmstart (nv,), (N, nv) or None; balanced: qfrc_constraint as balanced_constraint_force gives it
    (the steps that solve with M - h D), else J^T efc_force. rows: also the rows the solve built (a list of N Rows),
    each row's state (a list of N (nefc,)) and the cones' Hessians (a list of N {first row: (dim, dim)}), with efc_force,
    the states and the Hessians those of constraint.update at the solution (jar = J qacc - aref, cone_hessian) and
    qfrc_constraint J^T efc_force: the optimum the step's derivatives hold (derivatives._Constraints.solve). rows with
    own_force: the rows alone (no states, no Hessians), efc_force and qfrc_constraint the solver's as without rows (PGS
    and unconverged solves stop away from update's forces at their qacc): the rows forward_dynamics' warning reads.
    discrete: None, or (fields, ctrl, act) of a model of the discrete integrator: qacc its step map (cpp/forward.h's
    discrete_acceleration, forward.discrete_acceleration's twin) with tau in the place of f + c, fields native.step_fields'
    of its discrete step, ctrl (nu,) (required when nu) and act (na,) or None every state's; without rows; a seventh
    result, capped (N,): each state's relative residual |r| / |b| where its smooth solve in the coupled metric stopped
    at `iterations` (metric_pcg's, which warns there), -1 where it did not. front: None, or (actuators, ctrl, qfrc_applied)
    with tau None: tau made in the call as DynamicsEvaluator.evaluate makes it (cpp/forward.h's smooth_force: f =
    passive - c + actuator + applied, tau = f + c; actuators native.compiled_actuators', without activations or arms
    of the configuration: ValueError), ctrl (N, nu) and qfrc_applied (N, nv) or None; then each state's f
    (qfrc_smooth) and M (nv, nv) come last: (..., f, M)."""
    prepare_compiled(model)
    if not native.compiled_solver(model):
        raise UnsupportedModelError(f"the compiled backend has no {model.opt.solver!r} solver (the NumPy backend has)")
    out = _FORWARD(model, q, qd, tau, (contacts, eq_active, warmstart, float(tolerance), int(iterations), bool(balanced),
                                       bool(rows), bool(own_force), discrete, front))
    (qacc, qfrc, its, improvement, converged, *capped), sizes = out[:2]      # capped: discrete's, or the front's f, M
    if not rows:
        return qacc, qfrc, state_forces(sizes, out[2]), its, improvement, converged, *capped
    _, _, J, values, ints, (row,), mu = out[:7]
    found = (qacc, qfrc, state_forces(sizes, values[12]), its, improvement, converged,
             kernel_rows(contacts, sizes, J, values, ints, row, mu))
    if own_force:
        return (*found, *capped)
    ncone, (first, dim), hessians = out[7:]
    states, cones, at = state_forces(sizes, ints[2]), [], 0
    ends = ncone.cumsum().tolist()
    for a, b in zip([0] + ends[:-1], ends):                    # each state's cones, their Hessians dim x dim each
        cones.append({})
        for f, n in zip(first[a:b].tolist(), dim[a:b].tolist()):
            cones[-1][f], at = hessians[at:at + n * n].reshape(n, n), at + n * n
    return (*found, states, cones, *capped)
