"""Passive forces on a Data workspace (MuJoCo's engine_passive.c; mirrored function by function by cpp/passive.h):

    damper_spring_force(model, q, qd)   joint dampers and springs -b qd - k (q - springref)        (qfrc_damper + qfrc_spring)
    tendon_force(model, length, velocity)  tendon springs (dead band [lower, upper]) and dampers, along each tendon
    tendon_passive_force(model, L, J, qd)  their joint forces J^T f                                   (mj_passive's tendons)
    tendon_spring_energy(model, L)      the tendon springs' potential energy 1/2 k x^2               (mj_energyPos)
    apply_force(model, d, link, r, F, T, out)   joint forces of a force F and torque T at r          (mj_applyFT)
    gravcomp(model, d)                  -gravcomp m g at every body's centre of mass                (mj_gravcomp, qfrc_gravcomp)
    inertia_box_force(...)              drag and viscosity of a body's equivalent inertia box       (mj_inertiaBoxFluidModel)
    fluid_velocity_derivative(model, d) the inertia boxes' d qfrc_fluid / d qd                      (mjd_passive_vel)
    ellipsoid_force(...)                added mass, lift, drag and viscosity of an ellipsoid geom   (mj_ellipsoidFluidModel)
    fluid(model, d)                     the fluid forces of every fluid element                     (mj_fluid, qfrc_fluid)
    body_forces(model, d)               what gravcomp and fluid add to the forces of a step

A fluid element is a body's inertia box (the box of its mass and principal moments, in its inertial frame) or, on a
body with a geom whose fluidshape is "ellipsoid", each such geom (in its geom frame); the loader lists them
(Model.fluid_*). Its velocity is taken at the element's origin in its own frame, the wind subtracted; its local force
and torque turn back into the world and act at the origin. Arrays keep the state index last; r is taken relative to
the centre of the link's tree, as every spatial vector of the engine (physai.engine.data).
"""

import numpy as np

from physai.engine.data import Data
from physai.engine.model import Model, per_model
from physai.engine.model_checks import label
from physai.exceptions import UnsupportedModelError

#: MuJoCo's mjMINVAL: the floor of a denominator
MINVAL = 1e-15


def damper_spring_force(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """passive_force of a Model for arrays already checked (a simulation's running state), q (nq, ...) and qd (nv, ...):
    a batch keeps the state index last."""
    f = -model.dof_damping.reshape((-1,) + (1,) * (qd.ndim - 1)) * qd
    if len(model.spring_dofadr):                       # the springs (none: nothing to subtract)
        k = model.spring_stiffness.reshape((-1,) + (1,) * (q.ndim - 1))
        f[model.spring_dofadr] -= k * (q[model.spring_qposadr] - model.spring_ref.reshape(k.shape))
    return f


def tendon_force(model: Model, length: np.ndarray, velocity: np.ndarray) -> np.ndarray:
    """(ntendon,) [N | N m] the passive force along each tendon: -k x - b v, x the length beyond the spring's dead band
    [lower, upper] (tendon_lengthspring; zero inside), v the tendon's velocity (MuJoCo's mj_passive)."""
    return -_stretch(model, length) * model.tendon_stiffness - velocity * model.tendon_damping


def tendon_spring_energy(model, length: np.ndarray) -> float:
    """The tendons' spring potential energy sum 1/2 k x^2 [J], x the length beyond the dead band (MuJoCo's
    mj_energyPos)."""
    x = _stretch(model, length)
    return float(0.5 * (model.tendon_stiffness * x * x).sum())


def _stretch(model, length: np.ndarray) -> np.ndarray:
    """(ntendon,) each tendon's length beyond its spring's dead band [lower, upper] (tendon_lengthspring), 0 inside."""
    lower, upper = model.tendon_lengthspring[:, 0], model.tendon_lengthspring[:, 1]
    return np.where(length > upper, length - upper, np.where(length < lower, length - lower, 0.0))


def tendon_passive_force(model, length: np.ndarray, J: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """(nv,) [N m | N] J^T f of the tendons' springs and dampers f = tendon_force(length, J qd), for one state's tendon
    lengths (ntendon,) and Jacobian J (ntendon, nv) (physai.engine.tendon.tendons)."""
    return J.T @ tendon_force(model, length, J @ qd)


@per_model
def has_body_forces(model: Model) -> bool:
    """Whether the model has gravity compensation or fluid forces (forces that need the bodies' poses); made once per
    Model (every evaluation asks)."""
    return has_gravcomp(model) or has_fluid(model)


def has_gravcomp(model: Model) -> bool:
    return bool((model.body_gravcomp != 0).any())


def has_fluid(model: Model) -> bool:
    return len(model.fluid_bodyid) > 0


def check_integrator(model: Model, integrator: str) -> None:
    """UnsupportedModelError for ellipsoid-model fluid forces under an implicit or the discrete integrator: their velocity derivative
    (MuJoCo's mjd_ellipsoidFluid, in qDeriv) is not modelled (the inertia box's is: fluid_velocity_derivative)."""
    if integrator in ("implicit", "implicitfast", "discrete") and has_fluid(model) and model.fluid_ellipsoid.any():
        b = int(model.fluid_bodyid[np.argmax(model.fluid_ellipsoid)])
        body = label(model.body_name[b], b, "body")
        raise UnsupportedModelError(f"body {body!r} has fluid forces of the ellipsoid model (fluidshape) and the model "
                                    f"steps with the {integrator} integrator: physai does not model their velocity "
                                    "derivative (MuJoCo's mjd_ellipsoidFluid); use euler or rk4, or the inertia-box model")


def link_frames(model: Model, bodies: np.ndarray, pos: np.ndarray, rot: np.ndarray):
    """(link, pos (k, 3), rot (k, 3, 3)): frames given in their bodies' frames (pos (k, 3), rot (k, 3, 3)), in the frames
    of the links the bodies move with (-1: welded to the world)."""
    R = model.body_rot[bodies]
    return (model.body_linkid[bodies], model.body_pos[bodies] + np.einsum("kij,kj->ki", R, pos),
            np.einsum("kij,kjl->kil", R, rot))


def make_fluid_links(model: Model) -> tuple:
    """The fluid elements' frames in their links' frames (link_frames), made once by physai.engine.setconst.set_const."""
    return link_frames(model, model.fluid_bodyid, model.fluid_pos, model.fluid_rot)


def apply_force(model: Model, d: Data, link: int, r: np.ndarray, F: np.ndarray, T: np.ndarray, out: np.ndarray) -> None:
    """out (nv, n) += the joint forces of a force F (3, n) [N] and torque T (3, n) [N m] acting at r (3, n) (relative to
    the centre of link's tree) on link: dof i of the link's chain takes S_lin . F + S_ang . (r x F + T)."""
    dofs = model.kept("link_dofchains")[link]
    S = d.cdof[dofs]                                                   # (m, 6, n)
    # f_i = S_lin . F + S_ang . (r x F + T)
    moment = np.cross(r, F, axis=0) + T
    out[dofs] += np.einsum("min,in->mn", S[:, 3:], F) + np.einsum("min,in->mn", S[:, :3], moment)


def make_link_dofchains(model: Model) -> list[np.ndarray]:
    """Each link's dofs and its ancestors' (its chain to the root), made once by physai.engine.setconst.set_const for a
    model with forces on its bodies (has_body_forces: apply_force's only callers), none otherwise (a chain's are
    quadratic in its length)."""
    chains: list[np.ndarray] = []
    if not has_body_forces(model):
        return chains
    for link in range(model.nlink):
        dofs, i = [], model.link_dofadr[link] + model.link_dofnum[link] - 1
        while i >= 0:
            dofs.append(i)
            i = model.dof_parentid[i]
        chains.append(np.array(dofs, dtype=np.intp))
    return chains


def _origin(d: Data, link: int, pos: np.ndarray) -> np.ndarray:
    """(3, n): a point pos (3,) of link's frame, relative to the centre of its tree."""
    return d.cpos[link] + np.einsum("ijn,j->in", d.xmat[link], pos)


def gravcomp_force(model: Model) -> np.ndarray:
    """(nbody, 3) the constant gravity compensation force -gravcomp m g of each body [N]."""
    return -(model.body_gravcomp * model.body_mass)[:, None] * model.gravity[None]


def gravcomp(model: Model, d: Data) -> np.ndarray:
    """qfrc_gravcomp (nv, n): -gravcomp m g at each body's centre of mass, from a Data with com_pos done."""
    out = np.zeros((model.nv, d.n))
    forces = gravcomp_force(model)
    zero = np.zeros((3, d.n))
    for b in np.flatnonzero(model.body_gravcomp):
        link = int(model.body_linkid[b])
        if link >= 0:
            apply_force(model, d, link, body_com(model, d, b), np.repeat(forces[b][:, None], d.n, axis=1), zero, out)
    return out


def body_com(model: Model, d: Data, b: int) -> np.ndarray:
    """(3, n) body b's centre of mass relative to the centre of its tree, from a Data with com_pos done."""
    return _origin(d, int(model.body_linkid[b]), model.body_pos[b] + model.body_rot[b] @ model.body_ipos[b])


def inertia_box_force(w: np.ndarray, v: np.ndarray, box: np.ndarray, density: float, viscosity: float) -> np.ndarray:
    """(6, n) local (torque; force) on a body's inertia box of sides box (3,) [m] moving at local angular velocity w and
    linear velocity v (3, n) through the fluid (MuJoCo's mj_inertiaBoxFluidModel)."""
    lfrc = np.zeros((6,) + w.shape[1:])
    if viscosity > 0:
        # the sphere of the box's mean side: T = -pi D^3 mu w, F = -3 pi D mu v (Stokes)
        diam = (box[0] + box[1] + box[2]) / 3.0
        lfrc[:3] = -np.pi * diam * diam * diam * viscosity * w
        lfrc[3:] = -3.0 * np.pi * diam * viscosity * v
    if density > 0:
        # quadratic drag: F_i = -1/2 rho A_i |v_i| v_i, T_i = -rho b_i (b_j^4 + b_k^4) |w_i| w_i / 64
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            lfrc[3 + i] -= 0.5 * density * box[j] * box[k] * np.abs(v[i]) * v[i]
            lfrc[i] -= density * box[i] * (box[j] ** 4 + box[k] ** 4) * np.abs(w[i]) * w[i] / 64.0
    return lfrc


def ellipsoid_force(w: np.ndarray, v: np.ndarray, size: np.ndarray, coef: np.ndarray, density: float,
                    viscosity: float) -> np.ndarray:
    """(6, n) local (torque; force) on an ellipsoid of semi-axes size (3,) [m] with MuJoCo's geom_fluid coefficients coef
    (12: interaction, blunt drag, slender drag, angular drag, Kutta lift, Magnus lift, virtual mass (3), virtual inertia
    (3)) moving at local w, v (3, n) (MuJoCo's mj_ellipsoidFluidModel: mj_addedMassForces, mj_viscousForces)."""
    interaction, blunt, slender, angular, kutta, magnus = coef[:6]
    vmass, vinertia = coef[6:9], coef[9:12]
    lfrc = np.zeros((6,) + w.shape[1:])
    # added mass: T = p x v + L x w, F = p x w with p = rho m_v v, L = rho I_v w
    p, L = density * vmass[:, None] * v, density * vinertia[:, None] * w
    lfrc[:3] = np.cross(p, v, axis=0) + np.cross(L, w, axis=0)
    lfrc[3:] = np.cross(p, w, axis=0)
    volume = 4.0 / 3.0 * np.pi * size[0] * size[1] * size[2]
    d_max, d_min = max(size), min(size)
    d_mid = size[0] + size[1] + size[2] - d_max - d_min
    A_max = np.pi * d_max * d_mid
    # Magnus lift: F = c_M rho V w x v
    magnus_force = np.cross(w, v, axis=0) * (magnus * density * volume)
    # the area projected along v, A = pi sqrt(den / num), and the cosine between v and the projection's normal
    s4 = np.array([(size[1] * size[2]) ** 4, (size[2] * size[0]) ** 4, (size[0] * size[1]) ** 4])
    s2 = np.array([(size[1] * size[2]) ** 2, (size[2] * size[0]) ** 2, (size[0] * size[1]) ** 2])
    v2 = v * v
    proj_denom = np.einsum("i,in->n", s4, v2)
    proj_num = np.einsum("i,in->n", s2, v2)
    A_proj = np.pi * np.sqrt(proj_denom / np.maximum(MINVAL, proj_num))
    speed = np.sqrt(np.einsum("in,in->n", v, v))
    cos_alpha = proj_num / np.maximum(MINVAL, speed * proj_denom)
    # Kutta-Joukowski lift: F = (c_K rho cos(a) A (n x v)) x v with n = s2 v
    circulation = np.cross(s2[:, None] * v, v, axis=0) * (kutta * density * cos_alpha * A_proj)
    kutta_force = np.cross(circulation, v, axis=0)
    # linear (Stokes) and quadratic drag of force and torque
    D = 2.0 / 3.0 * (size[0] + size[1] + size[2])
    I_max = 8.0 / 15.0 * np.pi * d_mid * d_max ** 4
    II = np.array([8.0 / 15.0 * np.pi * size[i] * max(size[(i + 1) % 3], size[(i + 2) % 3]) ** 4 for i in range(3)])
    mom_visc = w * (angular * II + slender * (I_max - II))[:, None]
    drag_lin = viscosity * 3.0 * np.pi * D + density * speed * (A_proj * blunt + slender * (A_max - A_proj))
    drag_ang = viscosity * np.pi * D ** 3 + density * np.sqrt(np.einsum("in,in->n", mom_visc, mom_visc))
    lfrc[:3] -= drag_ang * w
    lfrc[3:] += magnus_force + kutta_force - drag_lin * v
    return interaction * lfrc


def fluid(model: Model, d: Data) -> np.ndarray:
    """qfrc_fluid (nv, n) of every fluid element, from a Data with com_pos and com_vel done."""
    out = np.zeros((model.nv, d.n))
    for e, link, R, r, lw, lv in _element_motions(model, d):
        if model.fluid_ellipsoid[e]:
            lfrc = ellipsoid_force(lw, lv, model.fluid_size[e], model.fluid_coef[e], model.fluid_density,
                                   model.fluid_viscosity)
        else:
            lfrc = inertia_box_force(lw, lv, model.fluid_size[e], model.fluid_density, model.fluid_viscosity)
        # back to the world: T = R lfrc_ang, F = R lfrc_lin, at the element's origin
        T, F = np.einsum("ikn,kn->in", R, lfrc[:3]), np.einsum("ikn,kn->in", R, lfrc[3:])
        apply_force(model, d, link, r, F, T, out)
    return out


def _element_motions(model: Model, d: Data):
    """(element, link, R (3, 3, n), r (3, n), local w, local v (3, n)) of each fluid element on a moving link: its frame
    in the world, its origin relative to the centre, and its local velocity there with the wind subtracted."""
    links, pos, rot = model.kept("fluid_links")
    for e, link in enumerate(links.tolist()):
        if link < 0:
            continue
        R = np.einsum("ikn,kj->ijn", d.xmat[link], rot[e])              # the element's frame in the world
        r = _origin(d, link, pos[e])
        # local velocity at the element's origin, the wind subtracted: R^T w, R^T (v_c + w x r - wind)
        w, vc = d.cvel[link, :3], d.cvel[link, 3:]
        v = vc + np.cross(w, r, axis=0) - model.fluid_wind[:, None]
        yield e, link, R, r, np.einsum("kin,kn->in", R, w), np.einsum("kin,kn->in", R, v)


def inertia_box_damping(w: np.ndarray, v: np.ndarray, box: np.ndarray, density: float, viscosity: float) -> np.ndarray:
    """(6, n) d lfrc_k / d (w; v)_k of inertia_box_force, row by row (MuJoCo's mjd_inertiaBoxFluid keeps only these)."""
    B = np.zeros((6,) + w.shape[1:])
    if viscosity > 0:
        diam = (box[0] + box[1] + box[2]) / 3.0
        B[:3] = -np.pi * diam * diam * diam * viscosity
        B[3:] = -3.0 * np.pi * diam * viscosity
    if density > 0:
        # d(-c |x| x)/dx = -2 c |x|
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            B[i] -= density * box[i] * (box[j] ** 4 + box[k] ** 4) * 2 * np.abs(w[i]) / 64.0
            B[3 + i] -= 0.5 * density * box[j] * box[k] * 2 * np.abs(v[i])
    return B


def fluid_velocity_derivative(model: Model, d: Data) -> np.ndarray:
    """d qfrc_fluid / d qd (nv, nv, n) of the inertia boxes as MuJoCo's mjd_passive_vel takes it: sum_k B_k J_k^T J_k
    over the 6 local rows J = R^T (Jr; Jp) of each box's origin, B_k = inertia_box_damping (the local force's change
    in its own velocity component alone); from a Data with com_pos and com_vel done. The ellipsoid model's is not
    modelled (check_integrator refuses it)."""
    D = np.zeros((model.nv, model.nv, d.n))
    chains = model.kept("link_dofchains")
    for e, link, R, r, lw, lv in _element_motions(model, d):
        dofs = chains[link]
        S = d.cdof[dofs]                                               # (m, 6, n)
        # J = R^T (S_ang; S_lin + S_ang x r) over the chain's dofs
        J = np.concatenate([np.einsum("ikn,min->mkn", R, S[:, :3]),
                            np.einsum("ikn,min->mkn", R, S[:, 3:] + np.cross(S[:, :3], r[None], axis=1))], axis=1)
        B = inertia_box_damping(lw, lv, model.fluid_size[e], model.fluid_density, model.fluid_viscosity)
        D[np.ix_(dofs, dofs)] += np.einsum("ikn,kn,jkn->ijn", J, B, J)
    return D


def body_forces(model: Model, d: Data) -> np.ndarray:
    """(nv, n) what gravity compensation (into qfrc_passive, or qfrc_actuator for a joint with actuatorgravcomp when the
    model has actuators) and fluid forces add to a step's forces, from a Data with com_pos and com_vel done."""
    f = np.zeros((model.nv, d.n))
    if has_gravcomp(model):
        f += (model.gravcomp_passive + model.gravcomp_actuator)[:, None] * gravcomp(model, d)
    if has_fluid(model):
        f += fluid(model, d)
    return f
