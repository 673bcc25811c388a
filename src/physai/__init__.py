"""physai: rigid-body dynamics of robots in readable Python, checked against MuJoCo and Pinocchio.

    from physai import engine
    model = engine.from_mujoco("unitree_h1")          # any robot: hinge, slide, ball and free joints
    tau = engine.rnea(model, q, qd, qdd)              # q (nq,) or (N, nq); qd, qdd (nv,) or (N, nv)
    physai.view("unitree_h1", run)                    # replay a Trajectory in the browser (inline in a notebook)

Modules, one concept each:
    engine        the one engine: Model (flat arrays), Data (workspace), loaders, the stages (smooth, forward,
                  constraint) and the public functions, one state or N; compiled C++ (cpp/) or its NumPy reference
    joints        the only joint-type code: jcalc of every link, integrate, difference, random states
    dynamics      the lesson-11 teaching layer (Body, Tree, rnea, ...), kept as learners read it; a test oracle
    spatial       6-vector algebra (skew, cross products, spatial inertia, rotations, quaternions)
    validation    the argument checks at the boundary (named errors, Pinocchio-style messages)
    coriolis      Christoffel C(q, qd), Mdot, dM/dq
    jacobians     point and body Jacobians (mj_jac)
    forces        passive, actuator and applied forces: the right-hand side of the equation of motion
    integrators   MuJoCo's euler, rk4, implicit and implicitfast steps, without MuJoCo
    inverse       continuous and discrete (invdiscrete) inverse dynamics, RK4 shooting
    constraints   joint limits, friction loss, equalities and contacts: forward (Newton) and inverse dynamics
    tendons       tendon lengths, Jacobians and velocities (fixed and spatial tendons, wrapping, pulleys)
    collision     contact sets (from MuJoCo's contacts until physai finds its own)
    acceptance    the acceptance checks of the manipulator equation
    conventions   MuJoCo <-> Pinocchio free-flyer and ball-joint conventions
    derivatives   analytical derivatives of rnea, forward dynamics and one integrator step (A, B)
    identification  the inertial-parameter regressor, parameters, base parameters, physical consistency
    models        bundled MJCF files and Menagerie robots by name
    urdf          URDF robots as the lesson's Trees (from physai.engine.urdf's safe parse, inertial rpy kept)
    lab           the lessons' interactive labs in the browser (physai lab), and the viewer of a run (physai view)
    exceptions    one exception per kind of bad input
    extras        optional dependencies by need (lab, plot, dask): imported on first use, a missing one named
"""

import importlib

__version__ = "0.1.0"

#: Names re-exported here from deeper modules, imported on first use so that `import physai` stays light.
LAZY = {"view": "physai.lab.viewer"}


def __getattr__(name: str):
    """physai.view (physai.lab.viewer.view: replay a Trajectory in the browser, or inline in a notebook), imported
    when first asked for."""
    if name in LAZY:
        return getattr(importlib.import_module(LAZY[name]), name)
    raise AttributeError(f"module 'physai' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *LAZY])
