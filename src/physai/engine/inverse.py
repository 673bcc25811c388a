"""MuJoCo's inverse constraint problem, one state at a time (engine_inverse.c's mj_invConstraint): the forces of the
rows physai.engine.constraint builds at given accelerations, row by row, without a solver.

    inverse_force(rows, qacc)               efc_force at jar = J qacc - aref                        (mj_invConstraint)

The NumPy text here is the reference; the compiled backend runs the same in C++ (cpp/inverse.h):

    compiled_inverse                        the kernel constraint_inverse (rows, M, c and the forces, tau = M qacc + c
                                            - J^T f) on N states with their own contacts
"""

import numpy as np

from physai.engine import native
from physai.engine.constraint import Rows, kernel_options, prepare_compiled, state_forces, update
from physai.engine.model import Model


# ---------------------------------------------------------------- the inverse problem (mj_invConstraint)

def inverse_force(r: Rows, qacc: np.ndarray) -> np.ndarray:
    """efc_force for given accelerations: each row's force at jar = J qacc - aref, without a solver (the inverse problem
    decouples row by row: MuJoCo's mj_invConstraint)."""
    return update(r, r.J @ qacc - r.aref)[0]


# ---------------------------------------------------------------- the compiled kernel (cpp/inverse.h)

_INVERSE = native.kernel("constraint_inverse", options={"constraint": kernel_options})


def compiled_inverse(model: Model, q, qd, qacc, contacts, eq_active, discrete=None):
    """inverse_force() of one state or N with tau = M qacc + c - J^T f on the compiled backend: (tau, qfrc_constraint,
    efc_force (a list of N)). The rows are not returned (compiled_rows gives them). discrete: None, or a discrete
    model's step (solver.compiled_forward's discrete option): its step map inverted, tau = M^ qacc + c + h K qd - J^T f
    with M^ = M + h B + h^2 K and the rows at the step's end (cpp/inverse.h's discrete_state, constraints'
    _discrete_inverse's twin)."""
    prepare_compiled(model)
    (tau, qfrc), sizes, force = _INVERSE(model, q, qd, qacc, (contacts, eq_active, False, discrete))
    return tau, qfrc, state_forces(sizes, force)
