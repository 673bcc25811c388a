"""physai's engine: one Model for every robot (hinge, slide, ball and free joints), dynamics for one or N states.

    from physai import engine
    model = engine.from_mujoco("unitree_h1")     # or an MjModel, an MJCF path; engine.from_urdf, engine.compile_tree
    q, qd = engine.random_states(model, 1000)   # q (N, nq), qd (N, nv); one state is (nq,), (nv,)
    tau = engine.rnea(model, q, qd, qdd)        # (N, nv)
    M = engine.mass_matrix(model, q)            # (N, nv, nv)
    knee = model.joint("left_knee")             # .qpos, .dof: its slices of q and of qd, tau, M (not its joint index)
    q_next = engine.integrate(model, q, qd, dt) # MuJoCo's mj_integratePos

Organised like MuJoCo's engine: a constant Model of flat arrays (model.py; actuators.py), a per-state Data workspace
(data.py), loaders that read MuJoCo models, URDFs and lesson Trees (loaders.py, urdf.py) and end with set_const, which
makes the model's constants once (setconst.py, MuJoCo's mj_setConst: collision candidates, invweight0, ...), the
stages of the smooth dynamics (smooth.py: kinematics, com_pos, com_vel, rne, crb, M's Cholesky solves, aba, energy),
each one forward and one backward pass over links vectorized over states, and the public
functions built on them (api.py; batching.py takes one state or N), and the forward pipeline of one run and the
integrators (forward.py: DynamicsEvaluator, MuJoCo's engine_forward.c). Joint types are known to physai.joints alone.

The public functions run on a compiled backend (native.py: C++ kernels in cpp/ that mirror smooth.py, forward.py and the
others function by function) when it is built, and on the NumPy text otherwise: physai.engine.backend says which ("native"
or "numpy"); PHYSAI_BACKEND=numpy or physai.engine.set_backend("numpy") selects the NumPy reference.
engine.map_states(engine.rnea, model, q, qd, qdd) runs a function over Dask arrays of states, chunk by chunk
(chunked.py), on one machine or a cluster.
"""

import warnings

from physai.engine import native, smooth
from physai.engine.api import (aba, bias, body_kinetic_energy, body_potential_energy, energy, forward_dynamics, gravity,
                               kinetic_energy, mass_matrix, potential_energy, rnea)
from physai.engine.chunked import map_states
from physai.engine.configuration import difference, integrate, random_states
from physai.engine.data import Data, StepInputs
from physai.engine.forward import DynamicsEvaluator
from physai.engine.loaders import as_model, compile_tree, from_mujoco, from_urdf
from physai.engine.model import Model
from physai.engine.native import set_backend
from physai.engine.setconst import set_const

__all__ = [
    "Data", "DynamicsEvaluator", "Model", "StepInputs", "aba", "as_model", "bias", "body_kinetic_energy",
    "body_potential_energy", "compile_tree", "difference", "energy",
    "forward_dynamics", "from_mujoco", "from_urdf", "gravity", "integrate", "kinetic_energy", "map_states", "mass_matrix",
    "potential_energy", "random_states", "rnea", "set_backend", "set_const",
]

#: names of earlier releases, kept for one release: old name -> (its object, what to write instead)
_DEPRECATED = {
    "crba": (mass_matrix, "physai.engine.mass_matrix"),
    "kinematics": (smooth.kinematics, "physai.engine.smooth.kinematics (a stage on a Data)"),
    "com_pos": (smooth.com_pos, "physai.engine.smooth.com_pos (MuJoCo's mj_comPos stage on a Data, not the centre of mass)"),
    "com_vel": (smooth.com_vel, "physai.engine.smooth.com_vel (a stage on a Data)"),
    "rne": (smooth.rne, "physai.engine.smooth.rne (a stage on a Data; the result is physai.engine.rnea)"),
    "crb": (smooth.crb, "physai.engine.smooth.crb (a stage on a Data; the result is physai.engine.mass_matrix)"),
}


def __getattr__(name):
    if name == "backend":                 # physai.engine.backend: "native" or "numpy", read at each access
        return native.backend()
    if name in _DEPRECATED:
        target, instead = _DEPRECATED[name]
        warnings.warn(f"physai.engine.{name} is deprecated and will be removed in the next release; use {instead}",
                      DeprecationWarning, stacklevel=2)
        return target
    raise AttributeError(f"module 'physai.engine' has no attribute {name!r}")
