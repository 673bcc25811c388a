"""physai's engine: one Model for every robot (hinge, slide, ball and free joints), dynamics for one or N states.

    from physai import engine
    model = engine.from_mujoco("unitree_h1")     # or an MjModel, an MJCF path; engine.from_urdf, engine.compile_tree
    q, qd = engine.random_states(model, 1000)   # q (N, nq), qd (N, nv); one state is (nq,), (nv,)
    tau = engine.rnea(model, q, qd, qdd)        # (N, nv)
    M = engine.mass_matrix(model, q)            # (N, nv, nv)
    q_next = engine.integrate(model, q, qd, dt) # MuJoCo's mj_integratePos

Organised like MuJoCo's engine_core_smooth.c: a constant Model of flat arrays (physai.engine.model), a
per-state Data workspace (physai.engine.data), and algorithms made of one forward and one backward pass over
links, vectorized over states with numpy (physai.engine.algorithms). Joint types are known to physai.joints
alone. Checked against MuJoCo, Pinocchio and the lesson's teaching layer (physai.dynamics).

The public functions run on a compiled backend (physai.engine.native: C++ kernels that follow algorithms.py function
by function) when it is built, and on the NumPy text otherwise: physai.engine.backend says which ("native" or
"numpy"); PHYSAI_BACKEND=numpy or physai.engine.set_backend("numpy") selects the NumPy reference.
engine.map_states(engine.rnea, model, q, qd, qdd) runs a function over Dask arrays of states, chunk by chunk
(physai.engine.chunked), on one machine or a cluster.
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
from physai.engine.chunked import map_states
from physai.engine.configuration import difference, integrate, random_states
from physai.engine.data import Data
from physai.engine.loaders import as_model, compile_tree, from_mujoco, from_urdf
from physai.engine.model import Model
from physai.engine.native import set_backend

__all__ = [
    "Data", "Model", "aba", "as_model", "bias", "com_pos", "com_vel", "compile_tree", "crb", "crba", "difference", "energy",
    "forward_dynamics", "from_mujoco", "from_urdf", "gravity", "integrate", "kinematics", "kinetic_energy",
    "map_states", "mass_matrix", "potential_energy", "random_states", "rne", "rnea", "set_backend",
]


def __getattr__(name):
    if name == "backend":                 # physai.engine.backend: "native" or "numpy", read at each access
        from physai.engine import native

        return native.backend()
    raise AttributeError(f"module 'physai.engine' has no attribute {name!r}")
