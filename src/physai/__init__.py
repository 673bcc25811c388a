"""physai: rigid-body dynamics of robots in readable Python, checked against MuJoCo and Pinocchio.

    from physai import dynamics, models
    tree = dynamics.tree_from_mujoco(models.load("double_pendulum"))
    tau = dynamics.rnea(tree, q, qd, qdd)

Modules, one concept each:
    spatial       6-vector algebra (skew, cross products, spatial inertia, rotations)
    dynamics      the lesson-11 teaching layer: Body, Tree, rnea, mass_matrix, forward_dynamics, energy
    coriolis      Christoffel C(q, qd), Mdot, dM/dq
    jacobians     point and body Jacobians (mj_jac)
    forces        passive, actuator and applied forces: the right-hand side of the equation of motion
    integrators   MuJoCo's euler, rk4, implicit and implicitfast steps, without MuJoCo
    inverse       continuous and discrete (invdiscrete) inverse dynamics, RK4 shooting
    checks        the acceptance checks of the manipulator equation
    engine        the same Tree compiled to flat arrays: fast and batched
    derivatives   analytical derivatives of rnea, forward dynamics and one integrator step (A, B)
    identification  the inertial-parameter regressor, parameters, base parameters, physical consistency
    models        bundled MJCF files and Menagerie robots by name
    urdf          URDF robots as Trees (inertial rpy kept)
    exceptions    one exception per kind of bad input
"""

__version__ = "0.1.0"
