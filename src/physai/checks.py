"""Deprecated: physai.checks is now physai.acceptance (the acceptance checks of the manipulator equation); its
random_states is physai.acceptance.mujoco_states. This module is kept for one release and warns on import."""

import warnings

from physai.acceptance import *  # noqa: F403
from physai.acceptance import __all__ as _acceptance_names
from physai.acceptance import mujoco_states as random_states

__all__ = [*_acceptance_names, "random_states"]

warnings.warn("physai.checks is deprecated and will be removed in the next release; use physai.acceptance "
              "(checks.random_states is acceptance.mujoco_states)", DeprecationWarning, stacklevel=2)
