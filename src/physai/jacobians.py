"""Jacobians of points and bodies of a Tree, in the world frame (MuJoCo's mj_jac, mj_jacBody, mj_jacBodyCom).

A body's spatial velocity is v_b = sum of S_i qd_i over the joints i between the base and b (b included),
with S_i = (a_i, o_i x a_i) the world motion vector of joint i (physai.dynamics.jcalc). The world point p
fixed in body b then moves with

    pdot  = v_lin + omega x p = sum_i (S_i_lin + S_i_ang x p) qd_i = Jp qd       (3, nv)   [m/s]
    omega = sum_i S_i_ang qd_i                                    = Jr qd       (3, nv)   [rad/s]

so column i of Jp is S_i_lin - p x S_i_ang, column i of Jr is S_i_ang, and both are zero for joints
that do not move b. A body is named by its index in tree.bodies or by its Body.name.
"""

import numpy as np

from physai import _checks
from physai.dynamics import Tree, _dof_of, body_frames
from physai.exceptions import UnknownBodyError


def body_index(tree: Tree, body: int | str) -> int:
    """Index in tree.bodies of `body`, given as an index or a Body.name. Raises UnknownBodyError."""
    n = len(tree.bodies)
    if isinstance(body, str):
        for i, b in enumerate(tree.bodies):
            if b.name == body:
                return i
        known = ", ".join(repr(b.name) for b in tree.bodies if b.name)
        raise UnknownBodyError(f"the tree has no body named {body!r}; its bodies are {known or 'unnamed'}")
    if isinstance(body, (int, np.integer)) and not isinstance(body, bool) and 0 <= body < n:
        return int(body)
    raise UnknownBodyError(f"body {body!r} is not a body of the tree: expected an index 0..{n - 1} or a body name")


def point_jacobian(tree: Tree, q: np.ndarray, body: int | str, point: np.ndarray) -> np.ndarray:
    """Translational Jacobian Jp (3, nv) of a point fixed in `body`, so that its world velocity is Jp @ qd [m/s].

    point: (3,) position in the body's frame [m] (e.g. tree.bodies[b].com for the centre of mass).
    Equals the jacp of mujoco.mj_jac at the point's world position.
    """
    return body_jacobian(tree, q, body, point)[:3]


def body_jacobian(tree: Tree, q: np.ndarray, body: int | str, point: np.ndarray | None = None) -> np.ndarray:
    """Stacked world Jacobian (Jp; Jr) (6, nv) of a point fixed in `body`: (pdot; omega) = J @ qd.

    point: (3,) in the body's frame [m]; None means the body's origin. Rows 0-2 are MuJoCo's jacp and
    rows 3-5 its jacr: mj_jacBody for point=None, mj_jacBodyCom for point=tree.bodies[b].com.
    """
    b = body_index(tree, body)
    point = np.zeros(3) if point is None else _checks.as_array("point", point, (3,))
    R, p, S = body_frames(tree, q)
    return _jacobian(tree, S, b, p[b] + R[b] @ point)


def _jacobian(tree: Tree, S: list, b: int, p: np.ndarray) -> np.ndarray:
    """(Jp; Jr) (6, nv) of the world point p moving with body b, from the joints' motion vectors S."""
    dof = _dof_of(S)
    J = np.zeros((6, tree.nv))
    i = b
    while i >= 0:                                  # walk from b to the base: every joint on the way moves p
        if dof[i] is not None:
            J[:3, dof[i]] = S[i][3:] - np.cross(p, S[i][:3])   # velocity of p: v_lin + omega x p
            J[3:, dof[i]] = S[i][:3]
        i = tree.bodies[i].parent
    return J
