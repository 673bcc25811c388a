"""Random MJCF scenes of primitive geoms falling on a tilted plane, and MuJoCo's states along them, for the collision
and contact-simulation tests; in_mujocos_order, the order that pairs physai's contacts with MuJoCo's."""

import mujoco
import numpy as np

SHAPES = {"sphere": "0.06", "capsule": "0.04 0.08", "cylinder": "0.05 0.06", "box": "0.05 0.04 0.07",
          "ellipsoid": "0.06 0.04 0.03"}
#: with supported_only, each shape's contype bit and the shapes it may touch (conaffinity): none of the pairs physai
#: cannot collide yet (cylinder against capsule, cylinder and box; an ellipsoid against anything but a plane) can touch
BITS = {"plane": 1, "sphere": 2, "capsule": 4, "cylinder": 8, "box": 16, "ellipsoid": 32}
TOUCHES = {"plane": 63, "sphere": 31, "capsule": 1 | 2 | 4 | 16, "cylinder": 1 | 2, "box": 1 | 2 | 4 | 16, "ellipsoid": 1}


def _filter(kind: str, supported_only: bool) -> str:
    return f'contype="{BITS[kind]}" conaffinity="{TOUCHES[kind]}"' if supported_only else ""


def random_scene(seed: int, supported_only: bool = False, integrator: str = "Euler") -> str:
    """An MJCF scene: a tilted plane, free bodies of one to three geoms of every primitive shape, a two-link hinge chain,
    random contact parameters, one explicit pair and one excluded body pair; supported_only: contype and conaffinity
    keep apart the shapes physai cannot collide."""
    rng = np.random.default_rng(seed)
    tilt = rng.uniform(-0.2, 0.2, 2)
    bodies, names = [], []
    for b in range(7):
        geoms = []
        for k in range(rng.integers(1, 4)):
            kind = str(rng.choice(list(SHAPES)))
            pos = rng.uniform(-0.06, 0.06, 3) if k else np.zeros(3)
            axis = rng.normal(size=3)
            params = (f'condim="{rng.choice([1, 3, 4, 6])}" priority="{rng.integers(0, 2)}" solmix="{rng.uniform(0.1, 2):.3f}" '
                      f'friction="{rng.uniform(0.3, 1.2):.3f} {rng.uniform(0, .02):.4f} {rng.uniform(0, .002):.5f}" '
                      f'solref="{rng.uniform(0.01, 0.03):.4f} {rng.uniform(0.8, 1.2):.3f}" '
                      f'solimp="{rng.uniform(0.8, 0.9):.3f} {rng.uniform(0.92, 0.99):.3f} 0.001 0.5 2" '
                      f'margin="{rng.choice([0, 0, 0.01])}" gap="{rng.choice([0, 0, 0.005])}"')
            geoms.append(f'<geom name="g{b}_{k}" type="{kind}" size="{SHAPES[kind]}" pos="{pos[0]:.4f} {pos[1]:.4f} '
                         f'{pos[2]:.4f}" zaxis="{axis[0]:.4f} {axis[1]:.4f} {axis[2]:.4f}" {params} '
                         f'{_filter(kind, supported_only)}/>')
        x, y = rng.uniform(-0.25, 0.25, 2)
        z = rng.uniform(0.05, 0.5)
        names.append(f"b{b}")
        bodies.append(f'<body name="b{b}" pos="{x:.3f} {y:.3f} {z:.3f}"><freejoint/>{"".join(geoms)}</body>')
    chain = (f'<body name="arm" pos="0 0 0.3"><joint type="hinge" axis="0 1 0"/><geom type="capsule" size="0.03" '
             f'fromto="0 0 0 0.2 0 0" {_filter("capsule", supported_only)}/><body name="hand" pos="0.2 0 0">'
             f'<joint type="hinge" axis="0 1 0"/><geom type="sphere" size="0.05" {_filter("sphere", supported_only)}/>'
             f'<geom type="box" size="0.03 0.03 0.03" pos="0.05 0 0" {_filter("box", supported_only)}/></body></body>')
    return f"""<mujoco><option timestep="0.005" integrator="{integrator}"/><worldbody>
      <geom name="floor" type="plane" size="0 0 1" euler="{tilt[0]:.3f} {tilt[1]:.3f} 0" {_filter("plane", supported_only)}/>
      {''.join(bodies)}{chain}</worldbody>
      <contact><pair geom1="g0_0" geom2="floor" condim="4" friction="0.7 0.7 0.01 0.001 0.001" solref="0.015 1"
                     solreffriction="0.02 0.5" margin="0.003"/>
               <exclude body1="b1" body2="b2"/></contact></mujoco>"""


def convex_points(kind: str, rng: np.random.Generator) -> np.ndarray:
    """The vertices (n, 3) of a convex mesh of a kind: "box" (8 corners: every vertex searched, ties on a face),
    "apex" (a box with a ninth vertex over a face), "prism" (a regular prism of 5 to 12 sides: faces of more than 4
    corners, its hull's graph climbed), "hull" (random points: triangles, some points inside), "padded" (a box with
    points inside it and on its edges: more than 10 vertices, 8 on its hull, so MuJoCo climbs the graph of a box)."""
    if kind == "padded":
        box = convex_points("box", rng)
        edges = [box[a] + t * (box[b] - box[a]) for a, b in ((0, 1), (2, 6), (5, 7)) for t in (0.3, 0.6)]
        return np.vstack([box, rng.uniform(-0.5, 0.5, (3, 3)) * box.max(axis=0), edges])
    if kind in ("box", "apex"):
        s = rng.uniform(0.03, 0.08, 3)
        corners = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]) * s
        return np.vstack([corners, [[0, 0, 1.6 * s[2]]]]) if kind == "apex" else corners
    if kind == "prism":
        k, r, h = int(rng.integers(5, 13)), rng.uniform(0.03, 0.08), rng.uniform(0.02, 0.06)
        angle = 2 * np.pi * np.arange(k) / k
        return np.array([[r * np.cos(a), r * np.sin(a), z] for z in (-h, h) for a in angle])
    return rng.normal(size=(int(rng.integers(6, 40)), 3)) * rng.uniform(0.02, 0.06, 3)


def mesh_scene(seed: int, integrator: str = "Euler") -> str:
    """An MJCF scene of convex meshes (convex_points: one of each kind, two more at random) falling from random poses,
    some flat, onto a tilted plane, with random margins and gaps; the meshes touch only the plane."""
    rng = np.random.default_rng(seed)
    tilt = rng.uniform(-0.2, 0.2, 2) if seed % 2 else np.zeros(2)
    kinds = ["prism", "box", "apex", "hull"] + list(rng.choice(["box", "prism", "hull"], 2))     # the first lies flat
    assets, bodies = [], []
    for b, kind in enumerate(kinds):
        points = " ".join(f"{x:.5f}" for x in convex_points(kind, rng).ravel())
        assets.append(f'<mesh name="m{b}" vertex="{points}"/>')
        flat = b % 3 == 0
        euler = np.zeros(3) if flat else rng.uniform(-1.5, 1.5, 3)
        x, y = rng.uniform(-0.3, 0.3, 2)
        bodies.append(f'<body pos="{x:.3f} {y:.3f} {rng.uniform(0.05, 0.25):.3f}" euler="{euler[0]:.3f} {euler[1]:.3f} '
                      f'{euler[2]:.3f}"><freejoint/><geom type="mesh" mesh="m{b}" contype="2" conaffinity="1" '
                      f'margin="{rng.choice([0, 0, 0.01])}" gap="{rng.choice([0, 0.005])}" condim="{rng.choice([1, 3, 4, 6])}"/></body>')
    return f"""<mujoco><option timestep="0.004" integrator="{integrator}"/><asset>{''.join(assets)}</asset><worldbody>
      <geom name="floor" type="plane" size="0 0 1" euler="{tilt[0]:.3f} {tilt[1]:.3f} 0" contype="1" conaffinity="2"/>
      {''.join(bodies)}</worldbody></mujoco>"""


def states(m: mujoco.MjModel, steps: int, every: int, key: int | None = None):
    """MjData after mj_forward every `every` steps of mj_step from the first keyframe (or qpos0)."""
    d = mujoco.MjData(m)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, key)
    for k in range(steps):
        mujoco.mj_step(m, d)
        if k % every == 0:
            mujoco.mj_forward(m, d)
            yield k, d


def sphere_pile(spheres: int, radius: float = 0.05, overlap: float = 0.01) -> str:
    """An MJCF scene: `spheres` spheres (radius [m], each on a free joint) stacked in a square lattice of layers inside
    four walls on a floor (planes), neighbours overlapping by `overlap` of the radius: every sphere touches its
    neighbours from the first step (as in a settled pile, one island of them all) and the pile collapses."""
    side = int(np.ceil(np.sqrt(spheres / 4)))
    pitch = (2 - overlap) * radius
    half = side * pitch / 2 + radius                   # the walls just outside the outer spheres' centres
    bodies = []
    for i in range(spheres):
        layer, k = divmod(i, side * side)
        x, y = (np.array(divmod(k, side)) - (side - 1) / 2) * pitch
        z = radius * (1 - overlap) + layer * pitch
        bodies.append(f'<body pos="{x} {y} {z}"><freejoint/><geom type="sphere" size="{radius}"/></body>')
    walls = "".join(f'<geom type="plane" size="0 0 1" pos="{px} {py} 0" zaxis="{zx} {zy} 0"/>'
                    for px, py, zx, zy in [(-half, 0, 1, 0), (half, 0, -1, 0), (0, -half, 0, 1), (0, half, 0, -1)])
    return f'<mujoco><worldbody><geom type="plane" size="0 0 1"/>{walls}{"".join(bodies)}</worldbody></mujoco>'


def in_mujocos_order(mine, ref) -> list:
    """The order of physai's contacts mine that puts each nearest its MuJoCo twin in ref (same geom pairs): within a
    pair, the contact nearest ref's first, then ref's second... (where a clipped edge's or a capsule's side line's
    duplicate crossing points tie, MuJoCo's order of the contacts is rounding's)."""
    order, free = [], list(range(len(ref)))
    for k in range(len(ref)):
        same = [i for i in free if mine.geom[i].tolist() == ref.geom[k].tolist()]
        order.append(min(same, key=lambda i: np.abs(mine.pos[i] - ref.pos[k]).max()))
        free.remove(order[-1])
    return order


def without_meshes(model):
    """The physai model with its mesh geoms' data left out (geom_dataid -1, as a loader leaves a mesh it cannot read):
    every pair with such a geom is one physai cannot collide, refused by name (or left out by ignoring_unsupported)."""
    import dataclasses

    from physai import engine
    from physai.engine.geoms import MESH
    G = model.geoms
    bare = dataclasses.replace(G, geom_dataid=np.where(G.geom_type == MESH, -1, G.geom_dataid))
    return engine.set_const(dataclasses.replace(model, geoms=bare))


def capsule_beside_a_bare_mesh(gap: float, floor: bool = False):
    """A physai model: a free capsule (radius 0.1 m, half length 0.1 m, at 0.1 m height) and a free cube mesh (0.2 m
    side) gap [m] beside it, on a plane when floor, the mesh's data left out (without_meshes): the capsule-mesh pair
    (and the mesh's with the floor) refused by name."""
    from physai import engine
    cube = " ".join(f"{x} {y} {z}" for x in (-.1, .1) for y in (-.1, .1) for z in (-.1, .1))
    plane = '<geom type="plane" size="0 0 1"/>' if floor else ""
    xml = f"""<mujoco><asset><mesh name="cube" vertex="{cube}"/></asset><worldbody>{plane}
        <body pos="0 0 0.1"><freejoint/><geom type="capsule" size="0.1 0.1"/></body>
        <body pos="{0.2 + gap} 0 0.1"><freejoint/><geom type="mesh" mesh="cube"/></body></worldbody></mujoco>"""
    return without_meshes(engine.from_mujoco(mujoco.MjModel.from_xml_string(xml)))


#: issue R's scenes: a body MuJoCo's compiler marks "simple" (dof_simplenum > 0: its M keeps no off-diagonal entries of
#: its dofs, so implicitfast's D neither) when its slide comes before its hinge, not the other way round
SIMPLE_JOINTS = {"slide first": '<joint name="j1" type="slide" axis="0 0 1"/><joint name="j2" type="hinge" axis="1 0 0"/>',
                 "hinge first": '<joint name="j2" type="hinge" axis="1 0 0"/><joint name="j1" type="slide" axis="0 0 1"/>'}
#: the velocity terms coupling its two dofs through a fixed tendon: a damper, a velocity servo (its bias's slope), an
#: affine gain with a velocity term (D moves with ctrl)
SIMPLE_COUPLINGS = {"tendon damper": "", "velocity servo": '<velocity tendon="t" kv="1.5"/>',
                    "velocity gain": '<general tendon="t" gaintype="affine" gainprm="1 0 .6"/>'}


def simple_body(order: str, coupling: str, integrator: str, air: bool = False) -> str:
    """The MJCF of a body with a slide and a hinge (SIMPLE_JOINTS[order]) coupled by a fixed tendon's damper and
    SIMPLE_COUPLINGS[coupling], under `integrator` (MuJoCo's name), time step 5 ms; air: in air (inertia-box drag)."""
    medium = ' density="1.2" viscosity=".02"' if air else ""
    return (f'<mujoco><option integrator="{integrator}" timestep=".005"{medium}/><worldbody><body pos=".9 0 .6">'
            f'{SIMPLE_JOINTS[order]}<geom type="sphere" size=".08"/></body></worldbody><tendon><fixed name="t" '
            'damping=".8"><joint joint="j1" coef="1"/><joint joint="j2" coef=".7"/></fixed></tendon>'
            f'<actuator>{SIMPLE_COUPLINGS[coupling]}</actuator></mujoco>')


#: a free body MuJoCo marks simple (its box at the body's frame: diagonal inertia there) in air (inertia-box drag)
SIMPLE_FREE_BODY = """<mujoco><option integrator="implicitfast" timestep=".005" density="1.2" viscosity=".02"
  gravity="0 0 -9.81"/><worldbody><body pos="0 0 1"><freejoint/><geom type="box" size=".1 .2 .3" mass="1"/></body>
  </worldbody></mujoco>"""
