"""The narrow phase: contacts between two geoms of primitive shapes, MuJoCo's engine_collision_primitive.c pair by pair.

Each function takes the two geoms' world poses and sizes (pos (3,) [m], mat (3, 3): the geom's axes as columns, size
(3,): physai.engine.geoms' geom_size) and the margin [m] below which a contact is kept, and returns its contacts as a
list of (dist [m], pos (3,), normal (3,), tangent (3,)): the signed distance (negative: overlap), the point midway
between the surfaces, the unit normal from geom 1 towards geom 2, and the first tangent of the frame (zero: MuJoCo's
make_frame picks one). Geom 1 is the one of lower type (MuJoCo's mjtGeom order), as FUNCTIONS is keyed.
"""

import math

import numpy as np

from physai.engine.geoms import BOX, CAPSULE, CYLINDER, PLANE, SPHERE

MINVAL = 1e-15                                   # MuJoCo's mjMINVAL


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
    zero (MuJoCo's mju_makeFrame: then (0, 1, 0), or (0, 0, 1) when the normal is near y)."""
    x, y = normal.astype(float), tangent.astype(float)
    _normalize(x)
    if y @ y < 0.25:
        y = np.array([0.0, 1.0, 0.0]) if -0.5 < x[1] < 0.5 else np.array([0.0, 0.0, 1.0])
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


def capsule_capsule(pos1, mat1, size1, pos2, mat2, size2, margin) -> list:
    """Two capsules: sphere-sphere tests between the nearest points of their segments; parallel segments give up to two
    contacts, from the segments' ends."""
    axis1, axis2 = mat1[:, 2] * size1[1], mat2[:, 2] * size2[1]
    dif = pos1 - pos2
    ma, mb, mc = axis1 @ axis1, -(axis1 @ axis2), axis2 @ axis2
    u, v = -(axis1 @ dif), axis2 @ dif
    det = ma * mc - mb * mb
    clip = lambda x: min(max(x, -1.0), 1.0)                    # noqa: E731
    pair = lambda x1, x2: sphere_sphere(pos1 + axis1 * x1, mat1, size1, pos2 + axis2 * x2, mat2, size2, margin)  # noqa: E731
    if abs(det) >= MINVAL:
        x1, x2 = (mc * u - mb * v) / det, (ma * v - mb * u) / det
        if x1 > 1:
            x1, x2 = 1.0, (v - mb) / mc
        elif x1 < -1:
            x1, x2 = -1.0, (v + mb) / mc
        if x2 > 1:
            x2, x1 = 1.0, clip((u - mb) / ma)
        elif x2 < -1:
            x2, x1 = -1.0, clip((u + mb) / ma)
        return pair(x1, x2)
    out = pair(1.0, clip((v - mb) / mc)) + pair(-1.0, clip((v + mb) / mc))
    if len(out) >= 2:
        return out
    out += pair(clip((u - mb) / ma), 1.0)
    if len(out) >= 2:
        return out
    return out + pair(clip((u + mb) / ma), -1.0)


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


#: (type of geom 1, type of geom 2) -> its function, geom 1 of the lower type
FUNCTIONS = {
    (PLANE, SPHERE): plane_sphere, (PLANE, CAPSULE): plane_capsule, (PLANE, CYLINDER): plane_cylinder,
    (PLANE, BOX): plane_box, (SPHERE, SPHERE): sphere_sphere, (SPHERE, CAPSULE): sphere_capsule,
    (SPHERE, CYLINDER): sphere_cylinder, (CAPSULE, CAPSULE): capsule_capsule, (SPHERE, BOX): sphere_box,
    (CAPSULE, BOX): capsule_box,
}
