"""physai: rigid-body dynamics of robots in readable Python, checked against MuJoCo and Pinocchio.

    from physai import dynamics, models
    tree = dynamics.tree_from_mujoco(models.load("double_pendulum"))
    tau = dynamics.rnea(tree, q, qd, qdd)

Modules: spatial (6-vector algebra), dynamics (the lesson-11 teaching layer), models (MJCF files and
Menagerie robots by name), exceptions.
"""

__version__ = "0.1.0"
