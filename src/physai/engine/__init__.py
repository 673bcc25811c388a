"""physai's fast engine: the Tree compiled into flat arrays, dynamics for one state or N states at once.

    from physai import dynamics, engine, models
    model = engine.compile_tree(dynamics.tree_from_mujoco(models.load("franka_emika_panda")))
    tau = engine.rnea(model, q, qd, qdd)        # q, qd, qdd: (nv,) -> (nv,), or (N, nv) -> (N, nv)
    M = engine.mass_matrix(model, q)            # (nv, nv) or (N, nv, nv)

Same equations and conventions as physai.dynamics (the teaching layer) and checked against it, MuJoCo and
Pinocchio; organised like MuJoCo's engine_core_smooth.c: a constant Model of per-body arrays
(physai.engine.model), a per-state Data workspace (physai.engine.data), and algorithms made of one forward
and one backward pass over bodies, vectorized over states with numpy (physai.engine.algorithms).
"""

from physai.engine.algorithms import (
    aba,
    bias,
    com_pos,
    com_vel,
    crb,
    crba,
    energy,
    forward_dynamics,
    gravity,
    kinematics,
    kinetic_energy,
    mass_matrix,
    potential_energy,
    rne,
    rnea,
)
from physai.engine.data import Data
from physai.engine.model import JNT_HINGE, JNT_SLIDE, Model, compile_tree, jcalc

__all__ = [
    "JNT_HINGE", "JNT_SLIDE", "Data", "Model", "aba", "bias", "com_pos", "com_vel", "compile_tree", "crb", "crba",
    "energy", "forward_dynamics", "gravity", "jcalc", "kinematics", "kinetic_energy", "mass_matrix", "potential_energy",
    "rne", "rnea",
]
