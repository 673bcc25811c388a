"""Exceptions raised by physai. Each message names the offending thing and what was expected."""


class PhysaiError(Exception):
    """Base class of every error physai raises on purpose."""


class ShapeError(PhysaiError, ValueError):
    """An array argument has the wrong shape, e.g. "q has 7 entries, the model needs 9"."""


class InvalidStateError(PhysaiError, ValueError):
    """A state or input holds NaN or infinity."""


class InvalidArgumentError(PhysaiError, ValueError):
    """An option is outside its domain: unknown integrator name, non-positive timestep, negative step count, ..."""


class ConvergenceError(PhysaiError, RuntimeError):
    """An iterative solver (e.g. RK4 shooting) did not reach its tolerance."""


class DivergenceError(PhysaiError, ArithmeticError):
    """A simulation's state stopped being finite: the message names the step, the time and the integrator."""


class InvalidModelError(PhysaiError, ValueError):
    """A Body or Tree is inconsistent: bad parent order, invalid inertia, non-unit axis, ..."""


class InvalidInertiaError(InvalidModelError):
    """A mass or rotational inertia is not physical (negative, asymmetric, indefinite, triangle rule broken)."""


class UnsupportedModelError(PhysaiError, NotImplementedError):
    """The model uses a feature physai does not handle yet (ball or free joints, two joints in one body, ...)."""


class UnknownModelError(PhysaiError, LookupError):
    """No bundled or Menagerie model has this name."""


class UnknownBodyError(PhysaiError, LookupError):
    """No body of the tree has this index or name."""


class UnknownJointError(PhysaiError, LookupError):
    """No joint of the model has this index or name."""


class UnknownFrameError(PhysaiError, LookupError):
    """The model has no site or body of this name (physai.engine.Model.frame)."""


class UnknownQuantityError(PhysaiError, LookupError):
    """A quantity asked of a step (step_result's observe) is not one it gives; the message lists those it does."""


class UnknownKeyframeError(PhysaiError, LookupError):
    """The model has no keyframe of the requested name."""


class ModelUnavailableError(PhysaiError, RuntimeError):
    """A Menagerie robot is known but its files cannot be had (no network and no MENAGERIE_ROOT)."""


class LabError(PhysaiError, ValueError):
    """A lab spec or lesson file is unusable: malformed JSON, no lab block, a missing or mistyped field, a model path
    leading outside the lab's folder."""


class LessonError(PhysaiError, ValueError):
    """A lesson file cannot be read (not UTF-8 text, too large), or one of its knowledge checks is malformed."""


class UnknownLabError(PhysaiError, LookupError):
    """`physai lab NAME`: no bundled lab has this name (and no such file exists)."""


class ConvergenceWarning(RuntimeWarning):
    """An iterative solver stopped at its iteration limit before its tolerance (the result is its last iterate)."""


class StiffRowWarning(RuntimeWarning):
    """A constraint solve had rows whose regulariser R is at MuJoCo's floor MINVAL (1e-15): their diagApprox is zero, as
    a contact's between two bodies that cannot translate (its normal J exactly zero). Their forces are aref / MINVAL,
    not physical, and their stiffness 1 / MINVAL leaves CG and PGS far from the minimum (MuJoCo's own too). The result
    is still MuJoCo's (physai.constraints.forward_dynamics)."""


class CacheFileError(PhysaiError, ValueError):
    """A file of physai's model cache cannot be used: another key, a failed checksum, unreadable, an unphysical model
    (physai.models.read_cached; physai.models.compiled discards the file with a CacheWarning and compiles again)."""


class RangeWarning(RuntimeWarning):
    """A trajectory leaves a joint's range (physai.acceptance.range_violations)."""


class CacheWarning(RuntimeWarning):
    """physai.models discarded a cache file (another key, a failed checksum, an unphysical model) and compiled again."""


class ActionWarning(RuntimeWarning):
    """A vector environment's actions hold NaN, infinity or a value beyond MuJoCo's mjMAXVAL (1e10) (physai.envs): an
    environment whose controls after clamping to ctrlrange are bad steps with every control zero, as MuJoCo's
    mj_fwdActuation (mjWARN_BADCTRL); the message names the environments."""


class CollisionWarning(RuntimeWarning):
    """Collision detection left out a geom pair that may be touching (physai.collision.detect with
    ignore_unsupported=True, collision.ignoring_unsupported): their bounding capsules come within the pair's margin, and
    physai has no narrow phase for their shapes."""


class MissingExtraError(PhysaiError, ImportError):
    """A feature needs an optional dependency group that is not installed, e.g. "physai lab needs the lab extra:
    pip install 'physai[lab]'" (physai.extras.require)."""


class TrajectoryFileError(PhysaiError, ValueError):
    """A saved trajectory (.npz) cannot be used: not a NumPy .npz, not a physai trajectory, a missing or mis-shaped
    array, NaN or infinity, or the trajectory of another model (Trajectory.load, physai view)."""


class RenderError(PhysaiError, RuntimeError):
    """No OpenGL context can be made for rendering (physai.envs' render_mode="rgb_array"): the backend MUJOCO_GL names
    (egl, osmesa or glfw) is not there or cannot start; the message names what failed and what to set."""
