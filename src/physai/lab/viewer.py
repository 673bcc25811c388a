"""Replay a physai Trajectory in the browser: the lab's page pieces (three.js to draw) fed with physai's positions and
the model as MuJoCo compiled it here, served on 127.0.0.1 by physai.lab.server's rules.

    server = make_server(model, trajectory, port)   # a ViewServer; server.url; server.serve_forever()
    server = view(model, trajectory)                # the same, answering in a thread, the page opened in a browser;
                                                    # in a Jupyter notebook shown inline instead (server._repr_html_)

model: a model name (physai.models.names()) or an MJCF file's path (a Menagerie scene.xml draws the floor and lights);
the server compiles it with MuJoCo and sends the page the compiled model's geoms, materials, meshes and sites, each
geom's and site's frame on its body (view.bin), and every state's body frames as physai computes them
(kinematics.body_poses of the run and of the ghost: run.bin's poses, float32); the page only composes each geom's and
site's frame on its body's (web/frames.js). The page has no kinematics of its own, compiles no model and loads no
MuJoCo WebAssembly build.

Routes (GET and HEAD): /            the viewer (web/view.html), and the lab page's files (web/) it imports
        /view.json   the run: times, q, qd, energy, joints, the named sites, each state's contacts (position, normal,
                     force in the world [N]) and actuator forces, and a second run's t and q if given (a ghost, drawn
                     translucent over the first), each state's body frames (poses), its arrays as references into
                     run.bin (split_arrays); the layout of view.bin's arrays ("model"'s "scene")
        /run.bin     the run's arrays (float64, int32 contact starts, float32 body frames)
        /view.bin    the compiled model's arrays the page draws and poses it from (scene_model)
        /view.lod.bin  its meshes simplified, which a page rendering in software draws while playing
                     (simplified_model, made on the first request)
        /vendor/...  three.js (physai.lab.npm)
"""

import contextlib
import dataclasses
import html
import json
import struct
import sys
import threading
import webbrowser
from pathlib import Path

import mujoco
import numpy as np

from physai import kinematics, models
from physai.exceptions import InvalidArgumentError, TrajectoryFileError
from physai.integrators import Trajectory
from physai.lab.npm import ensure_node_modules
from physai.lab.server import (IDLE_TIMEOUT, MAX_CONNECTIONS, REQUEST_TIMEOUT, VENDOR, WEB_DIR, LocalServer, Reply,
                               content_security_policy, security_headers)
from physai.spatial import mat_to_quat, quat_to_mat

PAGE = "view.html"
#: MjModel's arrays the page draws the model from (frames.js, scene.js), by name: the geoms, their materials and
#: meshes, the sites; beside them geom_mat and site_mat (scene_model)
SCENE_ARRAYS = ("geom_bodyid", "geom_type", "geom_size", "geom_pos", "geom_dataid", "geom_matid", "geom_group",
                "geom_rgba", "mat_rgba", "site_bodyid", "site_pos", "mesh_vertadr", "mesh_vertnum", "mesh_faceadr",
                "mesh_facenum", "mesh_vert", "mesh_face")
#: The simplified meshes' cubes, finest first, in the model's mean body size (stat.meansize; the G1's 0.125 m: cubes of
#: 3.1, 6.2 and 12.5 mm: 156,242, 93,737 and 46,166 triangles of the 393,270 it draws)
LOD_CELLS = np.array([1 / 40, 1 / 20, 1 / 10])
#: A simplification is kept if it draws at most this share of the triangles of the finer level kept
LOD_SHARE = 2 / 3
#: NumPy's dtypes as the page reads them (a JavaScript typed array of each)
TYPED = {"f8": "Float64Array", "f4": "Float32Array", "i4": "Int32Array"}
#: Who may frame the page when it is shown inline (embeddable): a notebook served from this machine (Jupyter on
#: localhost or 127.0.0.1, any port) or VS Code's notebook webviews; nothing else
LOCAL_FRAMERS = ("'self' http://127.0.0.1:* http://localhost:* https://127.0.0.1:* https://localhost:* "
                 "vscode-webview:")
#: [px] the height of the inline viewer's frame in a notebook
INLINE_HEIGHT = 640


def page_title(model: str | Path) -> str:
    """The page's title for a model given by name or path: a name as given, a file as its folder and name (the rest of a
    machine's path left out, e.g. unitree_g1/scene.xml)."""
    path = Path(str(model))
    return str(model) if len(path.parts) <= 2 else str(Path(path.parent.name) / path.name)


def pack_arrays(arrays: dict[str, np.ndarray]) -> tuple[dict, bytes]:
    """(each array's {type, offset [bytes], length} by name, the arrays' bytes one after another, each at a multiple of
    8 bytes): how view.bin carries the model's numbers to the page without a text round trip (float64 stays exact)."""
    layout, chunks, offset = {}, [], 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        if a.dtype.str[1:] not in TYPED:
            raise InvalidArgumentError(f"view.bin: {name} is {a.dtype}; the page reads {', '.join(TYPED)} arrays")
        layout[name] = {"type": TYPED[a.dtype.str[1:]], "offset": offset, "length": a.size}
        pad = -len(data) % 8
        chunks += [data, bytes(pad)]
        offset += len(data) + pad
    return layout, b"".join(chunks)


def one_number(rows: np.ndarray) -> np.ndarray:
    """Each row of non-negative integers (n, k) as one int64, equal for equal rows and ordered as the rows are
    (lexicographically): the digits of a number in base max + 1. ValueError if that overflows 63 bits."""
    base = int(rows.max(initial=0)) + 1
    if base ** rows.shape[1] >= 2 ** 63:
        raise ValueError(f"rows of {rows.shape[1]} numbers up to {base - 1} do not fit one int64")
    out = np.zeros(len(rows), dtype=np.int64)
    for column in rows.T:
        out = out * base + column
    return out


def face_normals(vert: np.ndarray, face: np.ndarray) -> np.ndarray:
    """Each triangle's (F, 3) corners' (V, 3) cross product (v1 - v0) x (v2 - v0): its normal times twice its area."""
    v0, v1, v2 = (vert[face[:, c]] for c in range(3))
    return np.cross(v1 - v0, v2 - v0)


def clustered_meshes(m: mujoco.MjModel, cell: float, prefix: str = "lod_") -> dict[str, np.ndarray]:
    """The meshes of `m` simplified by vertex clustering, as MjModel's mesh arrays named with `prefix` (lod_mesh_vertadr,
    lod_mesh_vertnum, lod_mesh_faceadr, lod_mesh_facenum (nmesh,), lod_mesh_vert (V, 3) float32 [m], lod_mesh_face
    (F, 3) int32, each mesh's vertices from 0): each mesh's vertices in one cube of side `cell` [m] (of a grid in the
    mesh's frame) whose normals are nearest the same axis (+-x, +-y, +-z: the two sides of a thin plate apart) merged
    into their mean, so none moves farther than sqrt(3) cell; triangles left with two corners
    in one cube dropped, those turned over (their normal against the compiled triangle's), and repeated ones;
    lod_mesh_normal (V, 3) float32: each merged vertex's normal, the compiled mesh's area-weighted vertex normals
    summed over the cube (so that the shading stays the compiled mesh's). What the page draws while playing under a
    software renderer."""
    owner = np.repeat(np.arange(m.nmesh), m.mesh_vertnum)
    face_owner = np.repeat(np.arange(m.nmesh), m.mesh_facenum)
    corners = m.mesh_face + m.mesh_vertadr[face_owner][:, None]
    before = face_normals(m.mesh_vert.astype(float), corners)
    normal = np.zeros((len(m.mesh_vert), 3))                            # the compiled mesh's vertex normals,
    for c in range(3):                                                  # as three.js computes them
        np.add.at(normal, corners[:, c], before)
    side = 2 * np.argmax(np.abs(normal), axis=1) + (np.take_along_axis(normal, np.argmax(np.abs(normal), axis=1)[:, None],
                                                                      axis=1)[:, 0] < 0)   # the normal's nearest axis
    grid = np.floor(m.mesh_vert / cell).astype(np.int64)
    grid -= grid.min(axis=0, initial=0)
    _, cluster = np.unique(one_number(np.c_[owner, grid, side]), return_inverse=True)   # clusters sorted by mesh first
    count = np.bincount(cluster)
    vert = np.stack([np.bincount(cluster, m.mesh_vert[:, r]) for r in range(3)], axis=1) / count[:, None]
    normal = np.stack([np.bincount(cluster, normal[:, r]) for r in range(3)], axis=1)   # summed in each cluster
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300)
    face = cluster[corners]
    kept = (face[:, 0] != face[:, 1]) & (face[:, 1] != face[:, 2]) & (face[:, 2] != face[:, 0])
    kept &= np.einsum("ij,ij->i", face_normals(vert, face), before) > 0    # no triangle turned over
    face, face_owner = face[kept], face_owner[kept]
    turn = (np.argmin(face, axis=1)[:, None] + np.arange(3)) % 3        # each triangle from its least corner
    _, first = np.unique(one_number(np.take_along_axis(face, turn, axis=1)), return_index=True)
    first = np.sort(first)
    face, face_owner = face[first], face_owner[first]
    cluster_owner = owner[np.unique(cluster, return_index=True)[1]]
    vertadr = np.searchsorted(cluster_owner, np.arange(m.nmesh))
    facenum = np.bincount(face_owner, minlength=m.nmesh)
    arrays = {"mesh_vertadr": vertadr, "mesh_vertnum": np.bincount(cluster_owner, minlength=m.nmesh),
              "mesh_faceadr": np.cumsum(facenum) - facenum, "mesh_facenum": facenum, "mesh_vert": vert.astype(np.float32),
              "mesh_face": face - vertadr[face_owner][:, None], "mesh_normal": normal.astype(np.float32)}
    return {prefix + name: a if a.dtype == np.float32 else a.astype(np.int32) for name, a in arrays.items()}


def split_arrays(tree: dict) -> tuple[dict, bytes]:
    """(`tree` with each NumPy array in it, at any depth of dicts, replaced by {"bin": {type, offset, length, shape}},
    those arrays' bytes one after another (pack_arrays)): view.json's run, its numbers in run.bin, read by the page
    without parsing them as text (float64 stays exact)."""
    arrays = {}

    def swap(node, path):
        if isinstance(node, np.ndarray):
            arrays[path] = node
            return {"bin": path, "shape": list(node.shape)}
        if isinstance(node, dict):
            return {key: swap(value, f"{path}.{key}") for key, value in node.items()}
        return node

    light = swap(tree, "run")
    layout, blob = pack_arrays(arrays)
    return resolve_layout(light, layout), blob


def resolve_layout(node, layout: dict):
    """split_arrays' references {"bin": name, "shape"} completed with the array's layout (type, offset, length)."""
    if isinstance(node, dict) and "bin" in node:
        return {**node, **layout[node["bin"]]}
    if isinstance(node, dict):
        return {key: resolve_layout(value, layout) for key, value in node.items()}
    return node


def scene_model(m: mujoco.MjModel) -> tuple[dict, bytes]:
    """What the page needs of the compiled model `m` to draw it, posed by body_frames, without compiling it again:
    (view.json's "model"'s "scene": the sizes and MuJoCo's statistics (extent, center, meansize), with the layout of
    view.bin: the arrays SCENE_ARRAYS as MjModel holds them (float64, float32 for colors and mesh vertices, int32), and
    geom_mat (ngeom, 9), site_mat (nsite, 9): each geom's and site's rotation in its body's frame, row-major (the
    matrices of geom_quat and site_quat))."""
    arrays = {name: getattr(m, name) for name in SCENE_ARRAYS}
    arrays["geom_group"] = arrays["geom_group"].astype(np.int32)
    arrays["geom_mat"] = quat_to_mat(m.geom_quat.reshape(-1, 4)).reshape(-1, 9)
    arrays["site_mat"] = quat_to_mat(m.site_quat.reshape(-1, 4)).reshape(-1, 9)
    layout, blob = pack_arrays(arrays)
    sizes = {name: int(getattr(m, name)) for name in ("nq", "nbody", "njnt", "ngeom", "nsite", "nmesh")}
    stat = {"extent": float(m.stat.extent), "meansize": float(m.stat.meansize), "center": m.stat.center.tolist()}
    return {**sizes, "stat": stat, "arrays": layout, "mujoco": mujoco.__version__}, blob


def simplified_model(m: mujoco.MjModel) -> bytes:
    """view.lod.bin: the meshes of `m` simplified at a few levels (clustered_meshes in cubes of LOD_CELLS times the
    model's mean body size; a level kept only if it draws at most LOD_SHARE of the triangles of the finer one kept, the
    compiled meshes first), which only a page rendering in software fetches, when first played. Its
    bytes: a JSON header's length (uint32, little-endian), the header {"cells": each kept level's cube [m], finest
    first, "arrays": their layout (pack_arrays, offsets after the header; arrays prefixed lod0_, lod1_, ...)} padded
    to a multiple of 8 bytes, then the arrays."""
    arrays, cells, triangles = {}, [], int(m.mesh_facenum.sum())
    with contextlib.suppress(ValueError):                             # meshes too large for the grid: drawn whole
        for cell in LOD_CELLS * float(m.stat.meansize) if m.nmesh else ():
            level = clustered_meshes(m, cell, f"lod{len(cells)}_")
            drawn = int(level[f"lod{len(cells)}_mesh_facenum"].sum())
            if drawn <= LOD_SHARE * triangles:
                arrays |= level
                cells.append(float(cell))
                triangles = drawn
    layout, blob = pack_arrays(arrays)
    header = json.dumps({"cells": cells, "arrays": layout}).encode()
    header += b" " * (-(len(header) + 4) % 8)
    return struct.pack("<I", len(header)) + header + blob


def ghost_replay(m: mujoco.MjModel, ghost: Trajectory, source: str) -> dict:
    """A second run drawn over the first (view.json's "run"'s "ghost"): its t (S,) and q (S, nq), checked as replay."""
    checked = replay(m, dataclasses.replace(ghost, contacts=None, actuator_force=None), source)
    return {"t": checked["t"], "q": checked["q"], "dt": checked["dt"], "poses": checked["poses"]}


def body_frames(m: mujoco.MjModel, q: np.ndarray) -> dict:
    """Each state's body frames, what the page draws the bodies at (view.json's run's "poses"): xpos (S, nbody - 1, 3)
    [m] and xquat (S, nbody - 1, 4) (body to world, w first), physai's kinematics.body_poses of q (S, nq) (physai's
    body b is MuJoCo's b + 1; the rotations as quaternions, spatial.mat_to_quat), in float32: a drawn position is
    within 2^-24 of its size of physai's (6e-8 m at 1 m, under 1e-6 m within 16 m of the origin)."""
    pos, rot = kinematics.body_poses(m, q)
    return {"xpos": pos.astype(np.float32), "xquat": mat_to_quat(rot).astype(np.float32)}


def replay(m: mujoco.MjModel, trajectory: Trajectory, source: str) -> dict:
    """What the page replays (view.json's "run", its arrays in run.bin: split_arrays): t (S,), q (S, nq), qd (S, nv),
    energy (S,) or None (float64 arrays), the joints (name,
    qpos and dof address, type), the named sites (name, MuJoCo's site id), the base height's qpos index (a free first
    joint's z, else None), each state's contacts: start (S+1,) int32, pos (K, 3) [m], normal (K, 3) (the contact frame's first
    row), force (K, 3) in the world frame [N] (the contact frame's rows applied to mj_contactForce's first three
    components), the actuators' names, units and forces (S, nu) [N | N m] if recorded, and each state's body frames
    (poses: body_frames). TrajectoryFileError for a
    run of another model (nq, nv, nu)."""
    try:
        q, qd = np.asarray(trajectory.q, dtype=np.float64), np.asarray(trajectory.qd, dtype=np.float64)
    except (TypeError, ValueError):
        raise TrajectoryFileError(f"{source}: the trajectory's q and qd are not arrays of numbers") from None
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
    run = {"t": np.asarray(trajectory.t, dtype=float), "q": q, "qd": qd, "dt": float(trajectory.dt),
           "energy": None if trajectory.energy is None else np.asarray(trajectory.energy, dtype=float), "joints": joints,
           "sites": sites, "actuators": actuator_replay(m, trajectory.actuator_force, len(q), source),
           "base_height": int(m.jnt_qposadr[0]) + 2 if free else None, "contacts": None, "poses": body_frames(m, q)}
    c = trajectory.contacts
    if c is not None:
        world = np.einsum("kij,ki->kj", c.frame, c.force[:, :3])       # f_world = frame^T f_contact
        run["contacts"] = {"start": np.asarray(c.start, dtype=np.int32), "pos": np.asarray(c.pos, dtype=np.float64),
                           "normal": np.asarray(c.frame[:, 0], dtype=np.float64), "force": world.astype(np.float64)}
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
            "units": [_actuator_unit(m, a) for a in range(m.nu)], "force": force}


def _actuator_unit(m: mujoco.MjModel, a: int) -> str:
    """The unit of actuator a's force: N m on a hinge, N on a slide (joint transmissions), else "N | N m"."""
    if int(m.actuator_trntype[a]) in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
        kind = int(m.jnt_type[m.actuator_trnid[a, 0]])
        return {mujoco.mjtJoint.mjJNT_HINGE: "N m", mujoco.mjtJoint.mjJNT_SLIDE: "N"}.get(kind, "N | N m")
    return "N | N m"


class ViewServer(LocalServer):
    """The viewer's server on 127.0.0.1:port (see the module docstring). `embeddable`: the page lets a notebook on this
    machine frame it (LOCAL_FRAMERS), else nothing may; in a notebook, the server shows itself as that frame
    (_repr_html_)."""

    def __init__(self, model: str | Path, trajectory: Trajectory, port: int, quiet: bool = True,
                 idle_timeout: float = IDLE_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                 request_timeout: float = REQUEST_TIMEOUT, title: str | None = None, ghost: Trajectory | None = None,
                 embeddable: bool = False):
        m = models.load(models.model_path(model).resolve())
        run = replay(m, trajectory, str(model))
        run["ghost"] = None if ghost is None else ghost_replay(m, ghost, f"{model} (the ghost)")
        run, self.run_bin = split_arrays(run)
        scene, self.view_bin = scene_model(m)
        self.compiled, self.simplified, self.simplifying = m, None, threading.Lock()
        self.view_json = json.dumps({"title": title or page_title(model), "model": {"scene": scene},
                                     "run": run}).encode()
        self.embeddable = embeddable
        csp = content_security_policy((WEB_DIR / PAGE).read_text(encoding="utf-8"),
                                      ancestors=LOCAL_FRAMERS if embeddable else None)
        headers = security_headers(csp)
        if embeddable:
            del headers["X-Frame-Options"]                           # it cannot name origins; frame-ancestors does
        super().__init__(port, headers, VENDOR, quiet, idle_timeout, max_connections, request_timeout)

    def _repr_html_(self) -> str:
        """How a notebook shows the server: the page in an <iframe> of the notebook's width (only when embeddable;
        otherwise a link, since the page refuses to be framed)."""
        url = html.escape(self.url)
        if not self.embeddable:
            return f'<a href="{url}" target="_blank">physai view: {url}</a>'
        return (f'<iframe src="{url}" width="100%" height="{INLINE_HEIGHT}" style="border: 0" '
                f'title="physai view"></iframe>')

    @property
    def view_lod_bin(self) -> bytes:
        """simplified_model of the served model, made on the first request (only pages rendering in software ask)."""
        with self.simplifying:
            if self.simplified is None:
                self.simplified = simplified_model(self.compiled)
            return self.simplified

    def route(self, path: str) -> Reply:
        reply = super().route(path)
        if reply.path is not None:
            return reply
        if path == "/view.json":
            return Reply(self.view_json, "application/json")
        if path == "/view.bin":
            return Reply(self.view_bin, "application/octet-stream")
        if path == "/run.bin":
            return Reply(self.run_bin, "application/octet-stream")
        if path == "/view.lod.bin":
            return Reply(self.view_lod_bin, "application/octet-stream")
        return Reply(path=WEB_DIR / (PAGE if path == "/" else path.lstrip("/")), root=WEB_DIR)


def make_server(model, trajectory: Trajectory, port: int = 0, quiet: bool = True, ghost: Trajectory | None = None,
                embeddable: bool = False, **limits) -> ViewServer:
    """A viewer's server for `trajectory` of `model` on 127.0.0.1:port (0: any free port), with `ghost` (a second run of
    the model) drawn translucent over it, its page framable by a local notebook if `embeddable`; serve_forever(), then
    shutdown() and server_close(). TrajectoryFileError for a run of another model; LabError for a port in use."""
    return ViewServer(model, trajectory, port, quiet, ghost=ghost, embeddable=embeddable, **limits)


def in_notebook() -> bool:
    """Whether this interpreter is a Jupyter kernel (IPython's kernel app: Jupyter, JupyterLab, VS Code's notebooks),
    found without importing IPython: only if something imported it already."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)()
    return shell is not None and ("IPKernelApp" in getattr(shell, "config", {})
                                  or type(shell).__name__ == "ZMQInteractiveShell")


def view(model, trajectory: Trajectory, ghost=None, port: int = 0, open_browser: bool | None = None,
         inline: bool | None = None) -> ViewServer:
    """Serve the replay of `trajectory` (a Trajectory, or the path of one saved with Trajectory.save) of `model` (None:
    the one the trajectory names), and of `ghost` over it if given (the same), in a thread; returns the server
    (server.url; stop it with server.shutdown() and server.server_close()).

    inline (None: whether this is a Jupyter kernel, in_notebook()): the page may be framed by a local notebook and the
    server, the cell's value, shows as that frame (_repr_html_); open_browser (None: not inline) opens the page in a
    browser tab. The page loads nothing but the server's own files: it works without internet."""
    trajectory, ghost = (x if x is None or isinstance(x, Trajectory) else Trajectory.load(x) for x in (trajectory, ghost))
    inline = in_notebook() if inline is None else inline
    server = make_server(model or trajectory.model, trajectory, port, ghost=ghost, embeddable=inline)
    ensure_node_modules()                                  # MuJoCo's WebAssembly build and three.js, once, into the cache
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    if open_browser if open_browser is not None else not inline:
        webbrowser.open(server.url)
    return server
