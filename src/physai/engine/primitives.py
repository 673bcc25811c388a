"""The narrow phase: contacts between two geoms of primitive shapes, MuJoCo's engine_collision_primitive.c pair by pair.

Each function takes the two geoms' world poses and sizes (pos (3,) [m], mat (3, 3): the geom's axes as columns, size
(3,): physai.engine.geoms' geom_size) and the margin [m] below which a contact is kept, and returns its contacts as a
list of (dist [m], pos (3,), normal (3,), tangent (3,)): the signed distance (negative: overlap), the point midway
between the surfaces, the unit normal from geom 1 towards geom 2, and the first tangent of the frame (zero: MuJoCo's
make_frame picks one). Geom 1 is the one of lower type (MuJoCo's mjtGeom order), as FUNCTIONS is keyed. A mesh's function takes its
ConvexMesh (physai.engine.geoms) in place of its size.
"""

import math

import numpy as np

from physai.engine.model_checks import MAXVAL, MINVAL
from physai.spatial import tangent_axis
from physai.engine.geoms import BOX, CAPSULE, CYLINDER, ELLIPSOID, MESH, PLANE, SPHERE, ConvexMesh


def _normalize(v: np.ndarray) -> float:
    """v scaled to unit length in place (MuJoCo's mju_normalize3: (1, 0, 0) when shorter than MINVAL); its length."""
    length = math.sqrt(v @ v)
    if length < MINVAL:
        v[:] = (1.0, 0.0, 0.0)
    else:
        v *= 1.0 / length
    return length


def make_frame(normal: np.ndarray, tangent: np.ndarray) -> np.ndarray:
    """(3, 3) a contact frame (rows: normal, tangent, their cross product) from a normal and a first tangent that may be
    zero (MuJoCo's mju_makeFrame: then physai.spatial.tangent_axis, (0, 1, 0), or (0, 0, 1) when the normal is near y)."""
    x, y = normal.astype(float), tangent.astype(float)
    _normalize(x)
    if y @ y < 0.25:
        y = tangent_axis(x)
    y = y - x * (x @ y)
    _normalize(y)
    return np.array([x, y, np.cross(x, y)])


def plane_sphere(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A plane (normal: its z axis) and a sphere: one contact at the sphere's lowest point, halfway into the overlap."""
    normal = mat1[:, 2].copy()
    cdist = (pos2 - pos1) @ normal
    if cdist > margin + size2[0]:
        return []
    dist = cdist - size2[0]
    return [(dist, pos2 + normal * (-dist / 2 - size2[0]), normal, np.zeros(3))]


def plane_capsule(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A plane and a capsule: its two end spheres, each a plane-sphere contact, the frame along the capsule's axis."""
    axis = mat2[:, 2].copy()
    segment = size2[1] * axis
    out = []
    for end in (pos2 + segment, pos2 - segment):
        out += [(dist, pos, normal, axis.copy()) for dist, pos, normal, _ in plane_sphere(pos1, mat1, size1, end, mat2, size2, margin)]
    return out


def plane_cylinder(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A plane and a cylinder: the lowest point of the rim nearer the plane, the opposite rim's, and two more points on
    the near rim (120 degrees from the first) when they are within the margin."""
    normal, axis = mat1[:, 2].copy(), mat2[:, 2].copy()
    prjaxis = normal @ axis
    if prjaxis > 0:                                             # the axis points towards the plane
        axis, prjaxis = -axis, -prjaxis
    vec = pos2 - pos1
    dist0 = vec @ normal
    vec = axis * prjaxis - normal                               # -normal without its component along the axis
    len_sqr = vec @ vec
    if len_sqr >= MINVAL * MINVAL:
        vec = vec * (size2[0] / math.sqrt(len_sqr))
    else:                                                       # disk parallel to the plane: the cylinder's x axis
        vec = mat2[:, 0] * size2[0]
    prjvec = vec @ normal
    axis = axis * size2[1]
    prjaxis *= size2[1]
    out = []
    if dist0 + prjaxis + prjvec > margin:
        return out
    dist = dist0 + prjaxis + prjvec
    out.append((dist, pos2 + vec + axis + normal * (-dist * 0.5), normal, np.zeros(3)))
    if dist0 - prjaxis + prjvec <= margin:
        dist = dist0 - prjaxis + prjvec
        out.append((dist, pos2 + vec - axis + normal * (-dist * 0.5), normal, np.zeros(3)))
    prjvec1 = -prjvec * 0.5
    if dist0 + prjaxis + prjvec1 <= margin:
        side = np.cross(vec, axis)
        _normalize(side)
        side = side * (size2[0] * math.sqrt(3.0) / 2)
        dist = dist0 + prjaxis + prjvec1
        for sign in (1.0, -1.0):
            out.append((dist, pos2 + sign * side + axis - 0.5 * vec + normal * (-dist * 0.5), normal, np.zeros(3)))
    return out


def plane_box(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A plane and a box: its corners below the margin that point towards the plane, at most 4, in corner order."""
    normal = mat1[:, 2].copy()
    dist = (pos2 - pos1) @ normal
    out = []
    for i in range(8):
        local = np.array([size2[0] if i & 1 else -size2[0], size2[1] if i & 2 else -size2[1], size2[2] if i & 4 else -size2[2]])
        corner = mat2 @ local
        ldist = normal @ corner
        if dist + ldist > margin or ldist > 0:
            continue
        d = dist + ldist
        out.append((d, corner + pos2 + normal * (-d / 2), normal, np.zeros(3)))
        if len(out) >= 4:
            break
    return out


def plane_ellipsoid(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A plane and an ellipsoid (MuJoCo's mjc_PlaneConvex with its support point): one contact at the ellipsoid's point
    deepest below the plane, halfway into the overlap."""
    normal = mat1[:, 2].copy()
    local = mat2.T @ -normal
    support = local * size2
    _normalize(support)
    support = mat2 @ (support * size2) + pos2
    dist = normal @ (support - pos1)
    if dist > margin:
        return []
    return [(dist, support + normal * (-0.5 * dist), normal, np.zeros(3))]


def mat_times_mj(mat, v):
    """mat (3, 3) v (3,) with MuJoCo's order of sums (mju_mulMatVec3)."""
    return mat[:, 0] * v[0] + mat[:, 1] * v[1] + mat[:, 2] * v[2]


def mat_t_times_mj(mat, v):
    """mat.T v (mju_mulMatTVec3)."""
    return mat[0] * v[0] + mat[1] * v[1] + mat[2] * v[2]


def mesh_support(mesh: ConvexMesh, direction: np.ndarray, last: int = -1) -> tuple[int, int]:
    """(the vertex of a convex mesh farthest along direction (3,) in its frame as MuJoCo's support search finds it, where
    the next search of the same geom starts): among all vertices of a mesh of fewer than 10 (the first of equals, unless
    `last`, the vertex the previous search found, is as far: MuJoCo's cached vertex), else by climbing its hull's graph
    from the vertex kept for direction's cell of a 3 x 3 x 3 grid (or from `last`, the hull-local id where the previous
    climb ended, when that is at least as far along), to a neighbour farther along it while there is one. The second
    value: the vertex (a scan) or its hull-local id (a climb); last = -1: a cold start (MuJoCo's new mjCCDObj)."""
    V = mesh.vert
    along = V[:, 0] * direction[0] + V[:, 1] * direction[1] + V[:, 2] * direction[2]
    if mesh.hull is None or len(V) < 10:
        best = int(np.argmax(along))
        best = last if last >= 0 and not along[best] > along[last] else best
        return best, best
    start, ids, neighbours = mesh.hull
    cell = [int(x > 0.4) - int(x < -0.4) + 1 for x in direction]
    best = int(mesh.extrema[cell[0] * 9 + cell[1] * 3 + cell[2]])
    if last >= 0 and not along[ids[best]] > along[ids[last]]:      # warm start: the last climb's end unless worse
        best = last
    previous = -1
    while best != previous:                                   # a neighbour farther along: move there
        previous, k = best, int(start[best])
        while neighbours[k] >= 0:
            if along[ids[neighbours[k]]] > along[ids[best]]:
                best = int(neighbours[k])
            k += 1
    return int(ids[best]), best


def _quad_area(a, b, c, d) -> float:
    """The area of the quadrilateral a b c d, half the norm of its diagonals' cross product."""
    x, y, z = cross3(a - c, b - d)
    return math.sqrt(x * x + y * y + z * z) * 0.5


def _widest_quad(V: np.ndarray, k: int) -> tuple:
    """Three more corners (indices into V's polygon) of a wide quadrilateral on polygon V (n, 3) from its corner k:
    k + 1, k + 2, k + 3 at first, then the last corner moved on while the area grows, after each move the second and
    the first in turn (MuJoCo's polygon pruning with its first corner held)."""
    n = len(V)
    b, c, d = (k + 1) % n, (k + 2) % n, (k + 3) % n
    area = _quad_area(V[k], V[b], V[c], V[d])
    while (moved := _quad_area(V[k], V[b], V[c], V[(d + 1) % n])) > area:
        area, d = moved, (d + 1) % n
        while (moved := _quad_area(V[k], V[b], V[(c + 1) % n], V[d])) > area:
            area, c = moved, (c + 1) % n
        while (moved := _quad_area(V[k], V[(b + 1) % n], V[c], V[d])) > area:
            area, b = moved, (b + 1) % n
    return b, c, d


def plane_mesh(pos1, mat1, size1, pos2, mesh_mat, mesh: ConvexMesh, margin) -> list:
    """A plane and a convex mesh (MuJoCo 4's mjc_PlaneConvex): the mesh's vertex deepest below the plane (mesh_support);
    then, of the polygon at that vertex that faces the plane most, the corners after it in the polygon's order (of a
    polygon of more than 4 corners, 3 chosen by _widest_quad) that are below the margin and on the plane's side of the
    mesh's centre; at most 4 contacts, halfway into the overlap."""
    normal = mat1[:, 2].copy()

    def contact(vertex):
        point = mat_times_mj(mesh_mat, vertex) + pos2
        dif = point - pos1
        dist = normal[0] * dif[0] + normal[1] * dif[1] + normal[2] * dif[2]
        return dist, point + normal * (-0.5 * dist), point

    deepest = mesh_support(mesh, mat_t_times_mj(mesh_mat, -normal))[0]
    dist, pos, _ = contact(mesh.vert[deepest])
    if dist > margin:
        return []
    out = [(dist, pos, normal, np.zeros(3))]
    local = mat_t_times_mj(mesh_mat, normal)
    best, face = 1.0, -1
    for p in mesh.polymap[deepest]:                            # the polygon facing the plane most (the first of equals)
        n = mesh.normals[p]
        along = local[0] * n[0] + local[1] * n[1] + local[2] * n[2]
        if along < best:
            best, face = along, int(p)
    if face < 0:
        return out
    corners = mesh.polygons[face]
    k = int(np.flatnonzero(corners == deepest)[0]) if (corners == deepest).any() else 0
    n = len(corners)
    others = _widest_quad(mesh.vert[corners], k) if n > 4 else [(k + j) % n for j in range(1, n)]
    for j in others:
        dist, pos, point = contact(mesh.vert[corners[j]])
        side = point - pos2
        if dist > margin or normal[0] * side[0] + normal[1] * side[1] + normal[2] * side[2] > 0:
            continue
        out.append((dist, pos, normal, np.zeros(3)))
    return out


def sphere_sphere(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """Two spheres: one contact on the line of centres (when the centres coincide, the normal is the cross product of
    the two z axes)."""
    dif = pos1 - pos2
    cdist_sqr = dif @ dif
    min_dist = margin + size1[0] + size2[0]
    if cdist_sqr > min_dist * min_dist:
        return []
    dist = math.sqrt(cdist_sqr) - size1[0] - size2[0]
    normal = pos2 - pos1
    if _normalize(normal) < MINVAL:
        normal = np.cross(mat1[:, 2], mat2[:, 2])
        _normalize(normal)
    return [(dist, pos1 + normal * (size1[0] + dist / 2), normal, np.zeros(3))]


def sphere_capsule(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A sphere and a capsule: a sphere-sphere test with the point of the capsule's segment nearest the sphere."""
    axis = mat2[:, 2]
    x = min(max(axis @ (pos1 - pos2), -size2[1]), size2[1])
    return sphere_sphere(pos1, mat1, size1, pos2 + axis * x, mat2, size2, margin)


def sphere_cylinder(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A sphere and a cylinder: against its side (sphere-sphere with the axis point), a cap (plane-sphere), or a rim
    (sphere-sphere with the rim point), whichever the sphere's centre is nearest."""
    radius, height, axis = size2[0], size2[1], mat2[:, 2]
    vec = pos1 - pos2
    x = axis @ vec
    a_proj = axis * x
    p_proj = vec - a_proj
    p_proj_sqr = p_proj @ p_proj
    side, cap = abs(x) < height, p_proj_sqr < radius * radius
    if side and cap:                                            # the centre is inside: the nearer surface
        if height - abs(x) < radius - math.sqrt(p_proj_sqr):
            side = False
        else:
            cap = False
    if side:
        return sphere_sphere(pos1, mat1, size1, a_proj + pos2, mat2, size2, margin)
    if cap:
        if x > 0:
            pos_cap, mat_cap = pos2 + axis * height, mat2
        else:
            pos_cap, mat_cap = pos2 - axis * height, mat2 * np.array([-1.0, 1.0, -1.0])
        return [(dist, pos, -normal, tangent) for dist, pos, normal, tangent
                in plane_sphere(pos_cap, mat_cap, size2, pos1, mat1, size1, margin)]
    rim = p_proj * (radius / math.sqrt(p_proj_sqr)) + axis * (height if x > 0 else -height) + pos2
    return sphere_sphere(pos1, mat1, size1, rim, mat2, np.zeros(1), margin)


def _clip01(x: float) -> float:
    """x clamped to [0, 1] (MuJoCo's order: min(1, x), then 0 below 0)."""
    return 0.0 if x < 0 else min(1.0, x)


def cross3(a, b) -> np.ndarray:
    """a x b of two 3-vectors (np.cross's products and differences, without its axis handling)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def segment_weights(a0, a1, b0, b1) -> list:
    """The nearest points of segments a0-a1 and b0-b1 as weights (s, t) in [0, 1] of a0 + s (a1 - a0), b0 + t (b1 - b0)
    (MuJoCo 4's mjc_segWeights): one pair, or for (near-)parallel segments (|d1 x d2|^2 <= 1e-8 |d1|^2 |d2|^2) two,
    one per end of the first segment; an end whose nearest point lies beyond the second segment takes that segment's
    end and its nearest point on the first."""
    d1, d2, r = a1 - a0, b1 - b0, a0 - b0
    A, E = d1 @ d1, d2 @ d2
    if A <= MINVAL and E <= MINVAL:                             # two points
        return [(0.0, 0.0)]
    f = d2 @ r
    if A <= MINVAL:                                             # a point and a segment
        return [(0.0, _clip01(f / E))]
    c = d1 @ r
    if E <= MINVAL:
        return [(_clip01(-c / A), 0.0)]
    b = d1 @ d2

    def settle(s: float, t: float) -> tuple:                    # t beyond [0, 1]: the end of segment 2, projected back
        if t < 0:
            return _clip01(-c / A), 0.0
        if t > 1:
            return _clip01((b - c) / A), 1.0
        return s, t

    n = cross3(d1, d2)
    nn = n @ n
    if nn > A * 1e-8 * E:                                       # s = (d2 x r) . n / |n|^2, t = (b s + f) / E
        s = _clip01((n @ cross3(d2, r)) / nn)
        return [settle(s, (b * s + f) / E)]
    return [settle(0.0, f / E), settle(1.0, (f + b) / E)]       # parallel: each end of segment 1 projected


def capsule_capsule(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """Two capsules (MuJoCo 4's mjraw_CapsuleCapsule): sphere-sphere tests between the nearest points of their segments
    (segment_weights); (near-)parallel segments give up to two contacts."""
    axis1, axis2 = mat1[:, 2] * size1[1], mat2[:, 2] * size2[1]
    a0, a1, b0, b1 = pos1 - axis1, pos1 + axis1, pos2 - axis2, pos2 + axis2
    out = []
    for s, t in segment_weights(a0, a1, b0, b1):
        out += sphere_sphere(s * (a1 - a0) + a0, mat1, size1, t * (b1 - b0) + b0, mat2, size2, margin)
    return out


def sphere_box(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A sphere and a box (MuJoCo's mjraw_SphereBox): the box point nearest the sphere's centre, in the box's frame;
    a centre inside the box takes the nearest face."""
    center = mat2.T @ (pos1 - pos2)
    clamped = np.clip(center, -size2, size2)
    direction = clamped - center
    dist = _normalize(direction)
    if dist - size1[0] > margin:
        return []
    if dist <= MINVAL:                                          # the centre inside: the nearest face
        faces = [abs((1 if i % 2 else -1) * size2[i // 2] - center[i // 2]) for i in range(6)]
        closest, k = (size2[0] + size2[1] + size2[2]) * 2, 0
        for i in range(6):
            if closest > faces[i]:
                closest, k = faces[i], i
        nearest = np.zeros(3)
        nearest[k // 2] = -1.0 if k % 2 else 1.0
        pos = center + nearest * ((size1[0] - closest) / 2)
        normal, dist = mat2 @ nearest, -closest
    else:
        deepest = center + direction * size1[0]
        pos = clamped * 0.5 + deepest * 0.5
        normal = mat2 @ direction
    return [(dist - size1[0], mat2 @ pos + pos2, normal, np.zeros(3))]


def _capsule_box_second(pos, axis, halfaxis, size2, axisdir, cltype, clface, clcorner, cledge, bestsegmentpos,
                        bestboxpos) -> float:
    """Where along the capsule (in half lengths from the first point) MuJoCo's mjraw_CapsuleBox puts a second sphere,
    or -4 for none: along the box edge or face the segment lies over, clamped to stay above the box."""
    if cltype >= 0 and cltype // 3 != 1:                        # a corner of the box is closest
        c1 = axisdir ^ clcorner
        if c1 in (0, 7):                                        # pointing to or away from the corner
            return -4.0
        if c1 in (1, 2, 4):
            mul, de, dp = 1.0, 1 - bestsegmentpos, 1 + bestsegmentpos
        else:
            mul, c1, dp, de = -1.0, 7 - c1, 1 - bestsegmentpos, 1 + bestsegmentpos
        ax, ax1, ax2 = {1: (0, 1, 2), 2: (1, 2, 0), 4: (2, 0, 1)}[c1]
        if axis[ax] * axis[ax] > 0.5:                           # along the box's edge
            return min(de, 2 * size2[ax] / abs(halfaxis[ax])) * mul
        second = min(dp, 2 * size2[ax1] / abs(halfaxis[ax1]), 2 * size2[ax2] / abs(halfaxis[ax2]))
        return second * -mul
    if cltype >= 0:                                             # on a box edge
        c1 = (axisdir ^ clcorner) & (7 - (1 << cledge))
        if c1 not in (1, 2, 4):                                 # a T configuration: no second point
            return -4.0
        ax = cledge
        ax1, ax2 = {0: (1, 2), 1: (2, 0), 2: (0, 1)}[cledge]
        if abs(axis[ax1]) > abs(axis[ax2]):
            ax1 = ax2
        ax2 = 3 - ax - ax1
        if c1 & (1 << ax2):
            mul, second = 1.0, 1 - bestsegmentpos
        else:
            mul, second = -1.0, 1 + bestsegmentpos
        second = min(second, 2 * size2[ax2] / abs(halfaxis[ax2]))
        e2 = 1 - bestboxpos if ((axisdir & (1 << ax)) != 0) == ((c1 & (1 << ax2)) != 0) else 1 + bestboxpos
        return min(second, size2[ax] * e2 / abs(halfaxis[ax])) * mul
    if clface == -1:                                            # an end inside the box
        return -4.0
    mul = 1.0 if cltype == -3 else -1.0
    second = 2.0
    end = pos - halfaxis * mul
    for i in range(3):
        if i != clface:
            for limit in (size2[i], -size2[i]):
                e1 = (limit - end[i]) / halfaxis[i] * mul
                if 0 < e1 < second:
                    second = e1
    return second * mul


def capsule_box(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """A capsule and a box (MuJoCo's mjraw_CapsuleBox): the point of the capsule's segment nearest the box (over its
    two ends against the faces and its twelve edges), a sphere-box test there, and a second one further along the
    segment where it lies over the box."""
    halflength = size1[1]
    pos = mat2.T @ (pos1 - pos2)                                # the capsule in the box's frame
    axis = mat2.T @ mat1[:, 2]
    halfaxis = axis * halflength
    axisdir = (halfaxis[0] > 0) + 2 * (halfaxis[1] > 0) + 4 * (halfaxis[2] > 0)
    bestdist = margin + 2 * (size1[0] + halflength + size2[0] + size2[1] + size2[2])
    bestsegmentpos, bestboxpos, cltype, clface, clcorner, cledge = 0.0, 0.0, -4, -1, 0, 0
    for i in (-1, 1):                                           # an end of the segment over a face
        end = pos + halfaxis * i
        clipped, outside, face = end.copy(), 0, -1
        for j in range(3):
            if end[j] < -size2[j] or end[j] > size2[j]:
                outside, face = outside + 1, j
                clipped[j] = -size2[j] if end[j] < -size2[j] else size2[j]
        if outside > 1:
            continue
        gap = clipped - end
        dist = gap @ gap
        if dist < bestdist:
            bestdist, bestsegmentpos, cltype, clface = dist, float(i), -2 + i, face
    for j in range(3):                                          # the segment against each edge along axis j
        for i in range(8):
            if i & (1 << j):
                continue
            corner = np.array([size2[0] if i & 1 else -size2[0], size2[1] if i & 2 else -size2[1],
                               size2[2] if i & 4 else -size2[2]])
            corner[j] = 0.0
            dif = corner - pos
            ma, mb, mc = size2[j] * size2[j], -size2[j] * halfaxis[j], size1[1] * size1[1]
            u, v = -size2[j] * dif[j], halfaxis @ dif
            det = ma * mc - mb * mb
            if abs(det) < MINVAL:
                continue
            idet = 1 / det
            x1, x2 = (mc * u - mb * v) * idet, (ma * v - mb * u) * idet
            s1 = s2 = 1
            if x1 > 1:
                x1, s1, x2 = 1.0, 2, (v - mb) * (1 / mc)
            elif x1 < -1:
                x1, s1, x2 = -1.0, 0, (v + mb) * (1 / mc)
            if x2 > 1 or x2 < -1:
                x2, s2 = (1.0, 2) if x2 > 1 else (-1.0, 0)
                x1 = (u - mb) * (1 / ma) if s2 == 2 else (u + mb) * (1 / ma)
                if x1 > 1:
                    x1, s1 = 1.0, 2
                elif x1 < -1:
                    x1, s1 = -1.0, 0
            dif = corner - pos - halfaxis * x2
            dif[j] += size2[j] * x1
            dist = dif @ dif
            if dist < bestdist - MINVAL:
                c1 = s1 * 3 + s2
                bestdist, bestsegmentpos, bestboxpos = dist, x2, x1
                clcorner, cledge, cltype = i + (1 << j) * (c1 // 6), j, c1
    if cltype == -4:
        return []
    with np.errstate(divide="ignore", invalid="ignore"):       # an axis along a face divides by zero, as in C: inf
        second = _capsule_box_second(pos, axis, halfaxis, size2, axisdir, cltype, clface, clcorner, cledge, bestsegmentpos,
                                     bestboxpos)
    out = sphere_box(mat2 @ (pos + halfaxis * bestsegmentpos) + pos2, mat1, size1, pos2, mat2, size2, margin)
    if second > -3:
        out += sphere_box(mat2 @ (pos + halfaxis * (second + bestsegmentpos)) + pos2, mat1, size1, pos2, mat2, size2, margin)
    return out


#: box-box's rounding scales (MuJoCo's mjBOXBOX_*, double precision): slack on the separation tests times the boxes'
#: scale, sin^2 below which an edge-cross axis is noise, an axis component below which a support corner is ambiguous,
#: the squared relative radius of clipped duplicates, the edge axes' bias against faces
BOXBOX_SEPEPS, BOXBOX_PAREPS, BOXBOX_SGNEPS, BOXBOX_DUPEPS, BOXBOX_EDGEBIAS = 1e-13, 1e-16, 1e-9, 1e-14, 1e-6


def _clip_half_plane(poly: list, coord: int, sign: float, limit: float) -> list:
    """The polygon (a list of (x, y, z)) clipped to sign * v[coord] <= limit, z carried as an attribute (MuJoCo's
    clipHalfPlane: unchanged when every vertex is inside)."""
    d = [sign * v[coord] - limit for v in poly]
    if all(x <= 0 for x in d):
        return poly
    out = []
    for k, p in enumerate(poly):
        k1 = 0 if k + 1 == len(poly) else k + 1
        dp, dq = d[k], d[k1]
        if dp <= 0 and len(out) < 12:
            out.append(p)
        if ((dp < 0 and dq > 0) or (dp > 0 and dq < 0)) and len(out) < 12:
            q, t = poly[k1], dp / (dp - dq)
            out.append(tuple(p[i] + t * (q[i] - p[i]) for i in range(3)))
    return out


def box_box(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """Two boxes (MuJoCo's mjc_BoxBox): the separating-axis test over the 15 face and edge-cross axes (faces preferred
    on near-ties), then an edge-edge contact at the closest points of the supporting edges, or the incident face
    clipped against the reference face's sides, each clipped vertex within the margin a contact."""
    pos21, pos12 = mat1.T @ (pos2 - pos1), mat2.T @ (pos1 - pos2)
    rot = mat1.T @ mat2
    rotabs = np.abs(rot)
    septol = margin + BOXBOX_SEPEPS * (size1[0] + size1[1] + size1[2] + size2[0] + size2[1] + size2[2])
    sep_best, code = -MAXVAL, -1
    for i in range(3):                                          # the faces of box 1
        sep = abs(pos21[i]) - size1[i] - (rotabs[i, 0] * size2[0] + rotabs[i, 1] * size2[1] + rotabs[i, 2] * size2[2])
        if sep > septol:
            return []
        if sep > sep_best:
            sep_best, code = sep, i
    for j in range(3):                                          # the faces of box 2
        sep = abs(pos12[j]) - size2[j] - (rotabs[0, j] * size1[0] + rotabs[1, j] * size1[1] + rotabs[2, j] * size1[2])
        if sep > septol:
            return []
        if sep > sep_best:
            sep_best, code = sep, 3 + j
    sep_face, code_face = sep_best, code
    for i in range(3):                                          # the edge-cross axes e_i x (box 2's axis j)
        for j in range(3):
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            ax1, ax2 = -rot[i2, j], rot[i1, j]
            norm2 = ax1 * ax1 + ax2 * ax2
            if norm2 < BOXBOX_PAREPS:
                continue
            inv = 1 / math.sqrt(norm2)
            ax1, ax2 = ax1 * inv, ax2 * inv
            radius1 = size1[i1] * abs(ax1) + size1[i2] * abs(ax2)
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            a2_1, a2_2 = ax1 * rot[i1, j1] + ax2 * rot[i2, j1], ax1 * rot[i1, j2] + ax2 * rot[i2, j2]
            radius2 = size2[j1] * abs(a2_1) + size2[j2] * abs(a2_2)
            sep = abs(ax1 * pos21[i1] + ax2 * pos21[i2]) - radius1 - radius2
            if sep > septol:
                return []
            if sep - BOXBOX_EDGEBIAS * abs(sep) > sep_best and sep > sep_face:
                sep_best, code = sep, 6 + 3 * i + j
    if code < 0:
        return []

    def edge_axis(code: int) -> np.ndarray:
        i, j = (code - 6) // 3, (code - 6) % 3
        axis = np.zeros(3)
        axis[(i + 1) % 3], axis[(i + 2) % 3] = -rot[(i + 2) % 3, j], rot[(i + 1) % 3, j]
        _normalize(axis)
        return axis

    if code >= 6:                                               # an edge axis nearly a face's: the face instead
        axis = edge_axis(code)
        face_dot = abs(axis[code_face]) if code_face < 3 else abs(axis @ rot[:, code_face - 3])
        if face_dot > 0.99 and sep_best < sep_face + 0.05 * abs(sep_face) + MINVAL:
            code, sep_best = code_face, sep_face
    if code >= 6:
        return _box_box_edges(pos1, mat1, size1, size2, pos21, rot, code, edge_axis(code), septol)
    return _box_box_faces(pos1, mat1, size1, pos2, mat2, size2, pos21, pos12, rot, code, margin)


def _box_box_edges(pos1, mat1, size1, size2, pos21, rot, code, axis, septol) -> list:
    """box_box's edge-edge contact: the midpoint of the closest points of the supporting edges (both signs tried for
    an ambiguous support component), along the edge-cross axis."""
    i, j = (code - 6) // 3, (code - 6) % 3
    i1, i2, j1, j2 = (i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3
    if axis @ pos21 < 0:
        axis = -axis
    a2 = axis @ rot                                             # the axis in box 2's frame
    amb1 = i1 if abs(axis[i1]) < BOXBOX_SGNEPS else i2 if abs(axis[i2]) < BOXBOX_SGNEPS else -1
    amb2 = j1 if abs(a2[j1]) < BOXBOX_SGNEPS else j2 if abs(a2[j2]) < BOXBOX_SGNEPS else -1
    d2 = rot[:, j].copy()
    b = d2[i]
    denom = 1 - b * b
    best, w1, w2 = MAXVAL, None, None
    for v1 in range(2 if amb1 >= 0 else 1):
        for v2 in range(2 if amb2 >= 0 else 1):
            c1 = np.zeros(3)
            c1[i1] = size1[i1] if axis[i1] >= 0 else -size1[i1]
            c1[i2] = size1[i2] if axis[i2] >= 0 else -size1[i2]
            if amb1 >= 0 and v1:
                c1[amb1] = -c1[amb1]
            cc = np.zeros(3)
            cc[j1] = -size2[j1] if a2[j1] >= 0 else size2[j1]
            cc[j2] = -size2[j2] if a2[j2] >= 0 else size2[j2]
            if amb2 >= 0 and v2:
                cc[amb2] = -cc[amb2]
            c2 = rot @ cc + pos21
            e = c2 - c1
            d1e, d2e = e[i], d2 @ e
            s = 0.0 if denom < MINVAL else (d1e - b * d2e) / denom
            s = min(max(s, -size1[i]), size1[i])
            t = min(max(b * s - d2e, -size2[j]), size2[j])
            s = min(max(d1e + b * t, -size1[i]), size1[i])
            p1 = c1.copy()
            p1[i] += s
            p2 = c2 + d2 * t
            gap = p2 - p1
            if gap @ gap < best:
                best, w1, w2 = gap @ gap, p1, p2
    dist = (w2 - w1) @ axis
    if dist > septol:
        return []
    mid = 0.5 * (w1 + w2)
    return [(dist, mat1 @ mid + pos1, mat1 @ axis, np.zeros(3))]


def _box_box_faces(pos1, mat1, size1, pos2, mat2, size2, pos21, pos12, rot, code, margin) -> list:
    """box_box's face contact: the incident box's face most opposed to the reference face, clipped against the
    reference face's four sides; each clipped vertex within the margin a contact, midway between the surfaces."""
    ref1 = code < 3
    a = code if ref1 else code - 3
    sizeref, sizeinc = (size1, size2) if ref1 else (size2, size1)
    posref, matref, posoi = (pos1, mat1, pos21) if ref1 else (pos2, mat2, pos12)
    rinc = rot if ref1 else rot.T
    sgn = 1.0 if posoi[a] >= 0 else -1.0
    binc = 0
    for k in (1, 2):
        if abs(rinc[a, k]) > abs(rinc[a, binc]):
            binc = k
    tinc = -1.0 if sgn * rinc[a, binc] > 0 else 1.0
    ax, ay = (a + 1) % 3, (a + 2) % 3
    bu, bv = (binc + 1) % 3, (binc + 2) % 3
    cx, du, dv = np.zeros(3), np.zeros(3), np.zeros(3)
    for r, c in enumerate((ax, ay, a)):
        cx[r] = posoi[c] + tinc * sizeinc[binc] * rinc[c, binc]
        du[r], dv[r] = sizeinc[bu] * rinc[c, bu], sizeinc[bv] * rinc[c, bv]
    cx[2] = sgn * cx[2] - sizeref[a]
    du[2] *= sgn
    dv[2] *= sgn
    poly = [tuple(cx[r] + su * du[r] + sv * dv[r] for r in range(3)) for su, sv in ((1, 1), (-1, 1), (-1, -1), (1, -1))]
    for coord, sign, limit in ((0, 1.0, sizeref[ax]), (0, -1.0, sizeref[ax]), (1, 1.0, sizeref[ay]), (1, -1.0, sizeref[ay])):
        poly = _clip_half_plane(poly, coord, sign, limit)
    dupe2 = BOXBOX_DUPEPS * (sizeref[ax] * sizeref[ax] + sizeref[ay] * sizeref[ay])
    accepted = []
    for v in poly:
        if v[2] > margin:
            continue
        if not any((q[0] - v[0]) ** 2 + (q[1] - v[1]) ** 2 < dupe2 for q in accepted):
            accepted.append(v)
    nsign = sgn if ref1 else -sgn
    normal = nsign * matref[:, a]
    out = []
    for v in accepted:
        posc = np.zeros(3)
        posc[ax], posc[ay], posc[a] = v[0], v[1], sgn * (sizeref[a] + 0.5 * v[2])
        out.append((v[2], matref @ posc + posref, normal.copy(), np.zeros(3)))
    return out


#: (type of geom 1, type of geom 2) -> its function, geom 1 of the lower type
FUNCTIONS = {
    (PLANE, SPHERE): plane_sphere, (PLANE, CAPSULE): plane_capsule, (PLANE, CYLINDER): plane_cylinder,
    (PLANE, BOX): plane_box, (PLANE, ELLIPSOID): plane_ellipsoid, (PLANE, MESH): plane_mesh, (SPHERE, SPHERE): sphere_sphere,
    (SPHERE, CAPSULE): sphere_capsule, (SPHERE, CYLINDER): sphere_cylinder, (CAPSULE, CAPSULE): capsule_capsule,
    (SPHERE, BOX): sphere_box, (CAPSULE, BOX): capsule_box, (BOX, BOX): box_box,
}


def sequential_sum(terms: np.ndarray, block: int = 64) -> np.ndarray:
    """0 + terms[0] + terms[1] + ... summed one term after another along axis 0 (a running sum in blocks of `block`
    terms: np.add.accumulate, which never pairs or fuses), MuJoCo's and the compiled twin's order."""
    total = np.zeros(terms.shape[1:])
    for k in range(0, len(terms), block):
        chunk = terms[k:k + block].copy()
        chunk[0] = total + chunk[0]
        total = np.add.accumulate(chunk, axis=0)[-1]
    return total
