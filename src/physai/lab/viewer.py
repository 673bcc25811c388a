"""Replay a physai Trajectory in the browser: the lab's page pieces (MuJoCo's WebAssembly build for the model and its
kinematics, three.js to draw) fed with physai's positions, served on 127.0.0.1 by physai.lab.server's rules.

    server = make_server(model, trajectory, port)   # a ViewServer; server.url; server.serve_forever()
    server = view(model, trajectory)                # the same, answering in a thread, the page opened in a browser

model: a model name (physai.models.names()) or an MJCF file's path (a Menagerie scene.xml draws the floor and lights);
the page loads that file into MuJoCo and, for each frame, writes physai's q into qpos and runs mj_kinematics.

Routes (GET and HEAD): /            the viewer (web/view.html), and the lab page's files (web/) it imports
        /view.json   the run: times, q, qd, energy, joints, the named sites, each state's contacts (position, normal,
                     force in the world [N]) and actuator forces, and a second run's t and q if given (a ghost, drawn
                     translucent over the first)
        /model/...   the model's files, those listed in view.json only
        /vendor/...  MuJoCo's WebAssembly build and three.js (physai.lab.npm)
"""

import dataclasses
import json
import threading
import webbrowser
from pathlib import Path

import mujoco
import numpy as np

from physai import models
from physai.exceptions import TrajectoryFileError
from physai.integrators import Trajectory
from physai.lab.server import (IDLE_TIMEOUT, MAX_CONNECTIONS, REQUEST_TIMEOUT, VENDOR, WEB_DIR, LocalServer, Reply,
                               content_security_policy, folder_files, model_file_reply, security_headers)

PAGE = "view.html"


def model_source(model: str | Path) -> tuple[Path, bool]:
    """(the MJCF file of `model`, whether to serve its whole folder): a bundled model's file alone, a Menagerie robot's
    or a file's folder (meshes, textures, includes). UnknownModelError / ModelUnavailableError as physai.models."""
    path = models.model_path(model).resolve()
    return path, not (isinstance(model, str) and model in models.bundled())


def ghost_replay(m: mujoco.MjModel, ghost: Trajectory, source: str) -> dict:
    """A second run drawn over the first (view.json's "run"'s "ghost"): its t (S,) and q (S, nq), checked as replay."""
    checked = replay(m, dataclasses.replace(ghost, contacts=None, actuator_force=None), source)
    return {"t": checked["t"], "q": checked["q"], "dt": checked["dt"]}


def replay(m: mujoco.MjModel, trajectory: Trajectory, source: str) -> dict:
    """What the page replays (view.json's "run"): t (S,), q (S, nq), qd (S, nv), energy (S,) or None, the joints (name,
    qpos and dof address, type), the named sites (name, MuJoCo's site id), the base height's qpos index (a free first
    joint's z, else None), each state's contacts: start (S+1,), pos (K, 3) [m], normal (K, 3) (the contact frame's first
    row), force (K, 3) in the world frame [N] (the contact frame's rows applied to mj_contactForce's first three
    components), and the actuators' names, units and forces (S, nu) [N | N m] if recorded. TrajectoryFileError for a
    run of another model (nq, nv, nu)."""
    q, qd = np.asarray(trajectory.q), np.asarray(trajectory.qd)
    if q.ndim != 2 or q.shape[1] != m.nq or qd.shape != (len(q), m.nv):
        raise TrajectoryFileError(f"{source}: the trajectory's q {q.shape} and qd {qd.shape} are not those of the model "
                                  f"(nq = {m.nq}, nv = {m.nv}): a trajectory of another model? Expected (S, {m.nq}) and "
                                  f"(S, {m.nv})")
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise TrajectoryFileError(f"{source}: the trajectory holds NaN or infinity; expected finite positions and velocities")
    joints = [{"name": mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint {j}", "type": int(m.jnt_type[j]),
               "qpos": int(m.jnt_qposadr[j]), "dof": int(m.jnt_dofadr[j])} for j in range(m.njnt)]
    sites = [{"name": name, "id": i} for i in range(m.nsite) if (name := mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, i))]
    free = m.njnt > 0 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    run = {"t": np.asarray(trajectory.t).tolist(), "q": q.tolist(), "qd": qd.tolist(), "dt": float(trajectory.dt),
           "energy": None if trajectory.energy is None else np.asarray(trajectory.energy).tolist(), "joints": joints,
           "sites": sites, "actuators": actuator_replay(m, trajectory.actuator_force, len(q), source),
           "base_height": int(m.jnt_qposadr[0]) + 2 if free else None, "contacts": None}
    c = trajectory.contacts
    if c is not None:
        world = np.einsum("kij,ki->kj", c.frame, c.force[:, :3])       # f_world = frame^T f_contact
        run["contacts"] = {"start": c.start.tolist(), "pos": c.pos.tolist(), "normal": c.frame[:, 0].tolist(),
                           "force": world.tolist()}
    return run


def actuator_replay(m: mujoco.MjModel, force, S: int, source: str) -> dict | None:
    """view.json's "actuators": each actuator's name and unit ("N m" on a hinge, "N" on a slide, else "N | N m") and
    the recorded forces (S, nu) [N | N m]; None without them. TrajectoryFileError for forces not (S, nu) or not finite."""
    if force is None:
        return None
    force = np.asarray(force, dtype=float)
    if force.shape != (S, m.nu) or not np.all(np.isfinite(force)):
        raise TrajectoryFileError(f"{source}: the trajectory's actuator_force has shape {force.shape}, the model has nu = "
                                  f"{m.nu} actuators: expected finite numbers of shape ({S}, {m.nu})")
    return {"names": [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"actuator {a}" for a in range(m.nu)],
            "units": [_actuator_unit(m, a) for a in range(m.nu)], "force": force.tolist()}


def _actuator_unit(m: mujoco.MjModel, a: int) -> str:
    """The unit of actuator a's force: N m on a hinge, N on a slide (joint transmissions), else "N | N m"."""
    if int(m.actuator_trntype[a]) in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
        kind = int(m.jnt_type[m.actuator_trnid[a, 0]])
        return {mujoco.mjtJoint.mjJNT_HINGE: "N m", mujoco.mjtJoint.mjJNT_SLIDE: "N"}.get(kind, "N | N m")
    return "N | N m"


class ViewServer(LocalServer):
    """The viewer's server on 127.0.0.1:port (see the module docstring)."""

    def __init__(self, model: str | Path, trajectory: Trajectory, port: int, quiet: bool = True,
                 idle_timeout: float = IDLE_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                 request_timeout: float = REQUEST_TIMEOUT, title: str | None = None, ghost: Trajectory | None = None):
        path, whole = model_source(model)
        self.model_root, main, files = folder_files(path, whole, str(model))
        self.model_set = set(files)
        m = models.load(path)
        run = replay(m, trajectory, str(model))
        run["ghost"] = None if ghost is None else ghost_replay(m, ghost, f"{model} (the ghost)")
        self.view_json = json.dumps({"title": title or str(model), "model": {"file": main, "files": files},
                                     "run": run}).encode()
        csp = content_security_policy((WEB_DIR / PAGE).read_text(encoding="utf-8"))
        super().__init__(port, security_headers(csp), VENDOR, quiet, idle_timeout, max_connections, request_timeout)

    def route(self, path: str) -> Reply:
        reply = super().route(path)
        if reply.path is not None:
            return reply
        if path == "/view.json":
            return Reply(self.view_json, "application/json")
        if path.startswith("/model/"):
            return model_file_reply(path, self.model_root, self.model_set)
        return Reply(path=WEB_DIR / (PAGE if path == "/" else path.lstrip("/")), root=WEB_DIR)


def make_server(model, trajectory: Trajectory, port: int = 0, quiet: bool = True, ghost: Trajectory | None = None,
                **limits) -> ViewServer:
    """A viewer's server for `trajectory` of `model` on 127.0.0.1:port (0: any free port), with `ghost` (a second run of
    the model) drawn translucent over it; serve_forever(), then shutdown() and server_close(). TrajectoryFileError for a
    run of another model; LabError for a port in use."""
    return ViewServer(model, trajectory, port, quiet, ghost=ghost, **limits)


def view(model, trajectory: Trajectory, port: int = 0, open_browser: bool = True, ghost=None) -> ViewServer:
    """Serve the replay of `trajectory` (a Trajectory, or the path of one saved with Trajectory.save) of `model` (None:
    the one the trajectory names), and of `ghost` over it if given (the same), in a thread and open it in a browser;
    returns the server (server.url; stop it with server.shutdown() and server.server_close())."""
    trajectory, ghost = (x if x is None or isinstance(x, Trajectory) else Trajectory.load(x) for x in (trajectory, ghost))
    server = make_server(model or trajectory.model, trajectory, port, ghost=ghost)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    if open_browser:
        webbrowser.open(server.url)
    return server
