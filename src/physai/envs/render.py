"""Frames of one environment, drawn by MuJoCo's own renderer as Gymnasium's MujocoRenderer draws them (render_mode
"rgb_array"): the state put into an MjData, mj_forward, then mjv_updateScene, mjr_render and mjr_readPixels into an
offscreen buffer of an OpenGL context of the backend MUJOCO_GL names, read when the first frame is drawn: "egl"
(headless; physai's default when MUJOCO_GL is unset, where Gymnasium tries glfw, then egl, then osmesa), "osmesa"
(software) or "glfw" (a display).

The camera is Gymnasium's (gymnasium/envs/mujoco/mujoco_rendering.py, OffScreenViewer and MujocoRenderer): a free
camera looking at the median of the geoms' positions of the first state drawn, at the model's extent, then the task's
default_camera_config (DEFAULT_CAMERA_CONFIG of its *_v5.py) set on it; or the model's camera camera_id / camera_name
(fixed). Nothing here runs unless a frame is asked for.
"""

import importlib
import numbers
import os
import weakref

import mujoco
import numpy as np

from physai.exceptions import InvalidArgumentError, RenderError

#: MUJOCO_GL's values and the module whose GLContext each makes
BACKENDS = {"egl": "mujoco.egl", "osmesa": "mujoco.osmesa", "glfw": "mujoco.glfw"}
#: Gymnasium's MujocoEnv frame size (mujoco_env.DEFAULT_SIZE) [pixels]
DEFAULT_SIZE = 480


def gl_context(width: int, height: int):
    """A current OpenGL context of the backend MUJOCO_GL names ("egl" when unset); RenderError saying what failed."""
    backend = os.environ.get("MUJOCO_GL", "").strip().lower() or "egl"
    if backend not in BACKENDS:
        raise RenderError(f"MUJOCO_GL={backend!r}: physai.envs renders with MUJOCO_GL set to one of {sorted(BACKENDS)} "
                          "(egl: headless on a GPU or Mesa's EGL; osmesa: software; glfw: a window system)")
    try:
        context = importlib.import_module(BACKENDS[backend]).GLContext(width, height)
        context.make_current()
    except Exception as exc:                 # ImportError, OpenGL's and glfw's own errors: all mean no context
        raise RenderError(f"no OpenGL context for rendering with MUJOCO_GL={backend!r} ({type(exc).__name__}: {exc}); "
                          "set MUJOCO_GL=egl (headless, needs libEGL), osmesa (software, needs libOSMesa) or glfw "
                          "(needs a display) before rendering") from None
    return context


def chosen_camera(mj: mujoco.MjModel, camera_id=None, camera_name=None) -> int:
    """The camera Gymnasium's MujocoRenderer draws from: -1 (its free camera) when neither is given (a camera named
    "track" is not used then), camera_id, or the camera named camera_name; InvalidArgumentError for both, an index
    outside -1..ncam-1 or a name the model does not have."""
    if camera_id is not None and camera_name is not None:
        raise InvalidArgumentError("give camera_id or camera_name, not both (as Gymnasium's MujocoEnv)")
    if camera_name is not None:
        index = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_CAMERA, str(camera_name))
        if index < 0:
            names = [mj.camera(i).name for i in range(mj.ncam)]
            raise InvalidArgumentError(f"camera_name {camera_name!r}: the model has no such camera; it has {names}")
        return index
    if camera_id is None:
        return -1
    if not isinstance(camera_id, numbers.Integral) or isinstance(camera_id, bool) or not -1 <= camera_id < mj.ncam:
        raise InvalidArgumentError(f"camera_id must be -1 (the free camera) or a camera index below {mj.ncam}, "
                                   f"got {camera_id!r}")
    return int(camera_id)


class FrameRenderer:
    """RGB frames (height, width, 3) uint8 of states of one MjModel, drawn as Gymnasium's OffScreenViewer draws them.

    mj: the model (its offscreen buffer grown to width x height, as MujocoEnv grows it); width, height [pixels];
    camera: -1 (the free camera) or a camera index (camera_id()); camera_config: Gymnasium's default_camera_config
    ({MjvCamera attribute: value}) or None; max_geom, visual_options: MujocoRenderer's (an MjvScene's size, mjVIS flags).
    The OpenGL context is made by the first render() (gl_context); close() frees it.
    """

    def __init__(self, mj: mujoco.MjModel, width: int = DEFAULT_SIZE, height: int = DEFAULT_SIZE, camera: int = -1,
                 camera_config: dict | None = None, max_geom: int = 1000, visual_options: dict | None = None):
        for name, n in (("width", width), ("height", height), ("max_geom", max_geom)):
            if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {n!r}")
        self.mj, self.width, self.height, self.camera = mj, int(width), int(height), camera
        self.camera_config, self.max_geom = dict(camera_config or {}), int(max_geom)
        self.visual_options = dict(visual_options or {})
        self.context = None

    def _start(self, data: mujoco.MjData) -> None:
        """The OpenGL and MuJoCo render contexts, the scene and Gymnasium's camera, from the first state drawn."""
        m = self.mj
        m.vis.global_.offwidth = max(m.vis.global_.offwidth, self.width)
        m.vis.global_.offheight = max(m.vis.global_.offheight, self.height)
        context = gl_context(self.width, self.height)
        try:
            mjr = mujoco.MjrContext(m, mujoco.mjtFontScale.mjFONTSCALE_150)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, mjr)
        except Exception as exc:                 # MuJoCo's own error (e.g. an offscreen buffer the backend cannot give)
            context.free()
            raise RenderError(f"MuJoCo could not make its render context for a {self.width} x {self.height} frame "
                              f"({type(exc).__name__}: {exc})") from None
        self.scene, self.option = mujoco.MjvScene(m, self.max_geom), mujoco.MjvOption()
        for flag, value in self.visual_options.items():
            self.option.flags[flag] = value
        self.perturb, self.cam = mujoco.MjvPerturb(), mujoco.MjvCamera()
        self.cam.type, self.cam.fixedcamid = mujoco.mjtCamera.mjCAMERA_FREE, -1
        self.cam.lookat[:] = np.median(data.geom_xpos, axis=0)     # OffScreenViewer._init_camera
        self.cam.distance = m.stat.extent
        for key, value in self.camera_config.items():               # MujocoRenderer._set_cam_config
            if isinstance(value, np.ndarray):
                getattr(self.cam, key)[:] = value
            else:
                setattr(self.cam, key, value)
        self.viewport = mujoco.MjrRect(0, 0, self.width, self.height)
        self.mjr, self.context = mjr, context                       # set last: a failed start leaves none
        self.finalizer = weakref.finalize(self, free_contexts, mjr, context)   # freed with the renderer if not closed

    def render(self, qpos: np.ndarray, qvel: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
        """The frame (height, width, 3) uint8 of the state (qpos (nq,), qvel (nv,), ctrl (nu,)) after mj_forward."""
        data = mujoco.MjData(self.mj)
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos, qvel, ctrl
        mujoco.mj_forward(self.mj, data)
        if self.context is None:
            self._start(data)
        self.context.make_current()
        self.cam.type = mujoco.mjtCamera.mjCAMERA_FREE if self.camera == -1 else mujoco.mjtCamera.mjCAMERA_FIXED
        self.cam.fixedcamid = self.camera
        mujoco.mjv_updateScene(self.mj, data, self.option, self.perturb, self.cam, mujoco.mjtCatBit.mjCAT_ALL,
                               self.scene)
        mujoco.mjr_render(self.viewport, self.scene, self.mjr)
        rgb = np.zeros(3 * self.width * self.height, np.uint8)
        mujoco.mjr_readPixels(rgb, None, self.viewport, self.mjr)
        return rgb.reshape(self.height, self.width, 3)[::-1].copy()      # OpenGL's rows run bottom to top

    def close(self) -> None:
        """Free the OpenGL context (a later render() makes a new one, its camera from the state it draws)."""
        if self.context is not None:
            self.finalizer()
            self.context = None


def free_contexts(mjr: mujoco.MjrContext, context) -> None:
    """Free MuJoCo's render context (in its OpenGL context, made current), then that OpenGL context."""
    context.make_current()
    mjr.free()
    context.free()
