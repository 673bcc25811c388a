"""Section 6.2 (seed 004): the manipulator equation M(q) qdd + C(q, qd) qd + g(q) = tau and its four checks.

The seed's 2-DOF planar arm in a vertical plane with point masses at the link tips (m1 = 1.5 kg, m2 = 1.0 kg,
l1 = 0.5 m, l2 = 0.4 m), built as a physai Tree from Body records (point masses: zero rotational inertia),
at the seed's state q = (0.4, -0.7) rad, dq = (1.2, 0.9) rad/s, tau = (2.0, 0.5) N m. physai's M, C, g
(physai.dynamics, physai.coriolis) are printed beside the seed's closed forms, then the four checks of
physai.acceptance run on both.

    uv run python experiments/manipulator-equation/manipulator_equation.py

Prints and writes output.txt beside this file, the same on every machine: residuals at machine precision are
printed as the bounds of BOUNDS (their last digits depend on the CPU), which tests/test_seed_experiments.py asserts
the values against.
"""

from pathlib import Path

import numpy as np

from physai import acceptance
from physai import dynamics as dyn
from physai.coriolis import coriolis_matrix, mass_matrix_dot
from physai.lessons import bound

HERE = Path(__file__).resolve().parent
M1, M2, L1, L2, G = 1.5, 1.0, 0.5, 0.4, 9.81
Q = np.array([0.4, -0.7])
DQ = np.array([1.2, 0.9])
TAU = np.array([2.0, 0.5])

#: Printed bounds on the residuals: 7 to 100 times the worst value seen on the kernels tried, a few eps (2.2e-16) times
#: the scale of each quantity (M ~1 kg m^2, g ~15 N m, accelerations ~15 rad/s^2 through a solve with cond(M) ~20).
BOUNDS = {
    "M": 1e-14,            # [kg m^2] physai vs closed form; also |M - M^T| and the 200-state max |diff|
    "g": 1e-13,            # [N m] physai vs closed form
    "hold": 1e-12,         # [rad/s^2] |FD(q, 0, g(q))|
    "roundtrip": 1e-12,    # [N m] |ID(FD(tau)) - tau|, |tau| up to 10 N m
    "ddq": 1e-12,          # [rad/s^2] physai vs closed-form forward dynamics
    "coriolis": 1e-13,     # [N m] |C dq - (c - g)|
    "C": 1e-14,            # [N m s] physai vs closed form, and Mdot [kg m^2/s]
    "skew": 1e-14,         # [N m s] max |S + S^T|, S = Mdot - 2C
    "passivity": 1e-13,    # [W] |dq^T S dq|
}


def point_mass_arm() -> dyn.Tree:
    """The seed's arm as a Tree: hinges about -y, links along +x at q = 0, gravity -z, so a positive angle lifts
    a link and q is measured from the horizontal (the seed's g1 = (m1 + m2) g l1 cos q1 + m2 g l2 cos(q1 + q2))."""
    axis, zero = np.array([0.0, -1.0, 0.0]), np.zeros((3, 3))
    link1 = dyn.Body(parent=-1, pos=np.zeros(3), rot=np.eye(3), joint="hinge", axis=axis, anchor=np.zeros(3),
                     mass=M1, com=np.array([L1, 0.0, 0.0]), inertia=zero, name="link1")
    link2 = dyn.Body(parent=0, pos=np.array([L1, 0.0, 0.0]), rot=np.eye(3), joint="hinge", axis=axis,
                     anchor=np.zeros(3), mass=M2, com=np.array([L2, 0.0, 0.0]), inertia=zero, name="link2")
    return dyn.Tree([link1, link2], armature=np.zeros(2), gravity=np.array([0.0, 0.0, -G]))


# ---- the seed's closed forms (the same formulas, written for this script) ----


def closed_M(q):
    c2 = np.cos(q[1])
    a = M1 * L1**2 + M2 * (L1**2 + L2**2 + 2 * L1 * L2 * c2)
    b = M2 * (L2**2 + L1 * L2 * c2)
    return np.array([[a, b], [b, M2 * L2**2]])


def closed_C(q, dq):
    h = -M2 * L1 * L2 * np.sin(q[1])
    return np.array([[h * dq[1], h * (dq[0] + dq[1])], [-h * dq[0], 0.0]])


def closed_g(q):
    c12 = np.cos(q[0] + q[1])
    return np.array([(M1 + M2) * G * L1 * np.cos(q[0]) + M2 * G * L2 * c12, M2 * G * L2 * c12])


def closed_Mdot(q, dq):
    s = -M2 * L1 * L2 * np.sin(q[1])
    return np.array([[2 * s, s], [s, 0.0]]) * dq[1]


def closed_forward(q, dq, tau):
    return np.linalg.solve(closed_M(q), tau - closed_C(q, dq) @ dq - closed_g(q))


def closed_inverse(q, dq, ddq):
    return closed_M(q) @ ddq + closed_C(q, dq) @ dq + closed_g(q)


#: the seed's model in the signatures physai.acceptance takes (the tree argument is ignored)
CLOSED = dict(mass_matrix=lambda t, q: closed_M(q), gravity=lambda t, q: closed_g(q),
              bias=lambda t, q, dq: closed_C(q, dq) @ dq + closed_g(q),
              forward_dynamics=lambda t, q, dq, tau: closed_forward(q, dq, tau),
              rnea=lambda t, q, dq, ddq: closed_inverse(q, dq, ddq),
              coriolis=lambda t, q, dq: closed_C(q, dq), mass_matrix_dot=lambda t, q, dq: closed_Mdot(q, dq))


def quantities(tree: dyn.Tree, q=Q, dq=DQ, tau=TAU) -> dict:
    """physai's and the closed forms' M, eigenvalues, g, forward and inverse dynamics, Mdot, C, S at (q, dq, tau)."""
    out = {}
    for who, M, g, C, Md, fd in (
        ("physai", dyn.mass_matrix(tree, q), dyn.gravity(tree, q), coriolis_matrix(tree, q, dq),
         mass_matrix_dot(tree, q, dq), lambda v, t: dyn.forward_dynamics(tree, q, v, t)),
        ("seed", closed_M(q), closed_g(q), closed_C(q, dq), closed_Mdot(q, dq), lambda v, t: closed_forward(q, v, t)),
    ):
        ddq = fd(dq, tau)
        inverse = dyn.rnea(tree, q, dq, ddq) if who == "physai" else closed_inverse(q, dq, ddq)
        S = Md - 2 * C
        out[who] = dict(M=M, eig=np.linalg.eigvalsh(M), g=g, hold=fd(np.zeros(2), g), ddq=ddq, tau_back=inverse, C=C, Mdot=Md,
                        S=S, skew=float(np.abs(S + S.T).max()), passivity=float(dq @ S @ dq))
    return out


def four_checks(tree: dyn.Tree, n: int = 200, seed: int = 0) -> dict:
    """physai.acceptance on n random states (q in [-pi, pi]^2, dq in [-2, 2]^2, tau in [-10, 10]^2), for physai's
    dynamics and for the closed forms: worst value of each check."""
    rng = np.random.default_rng(seed)
    q, dq, tau = rng.uniform(-np.pi, np.pi, (n, 2)), rng.uniform(-2, 2, (n, 2)), rng.uniform(-10, 10, (n, 2))
    res = {}
    for who, kw in (("physai", {}), ("seed", CLOSED)):
        def pick(*names, kw=kw):
            return {k: kw[k] for k in names if k in kw}

        res[who] = {
            "asymmetry": acceptance.mass_matrix_asymmetry(tree, q, **pick("mass_matrix")),
            "min_eigenvalue": acceptance.mass_matrix_min_eigenvalue(tree, q, **pick("mass_matrix")),
            "hold": acceptance.hold_residual(tree, q, **pick("gravity", "forward_dynamics")),
            "roundtrip": acceptance.roundtrip_residual(tree, q, dq, tau, **pick("forward_dynamics", "rnea")),
            "coriolis": acceptance.coriolis_residual(tree, q, dq, **pick("coriolis", "bias", "gravity")),
            "skew": acceptance.skew_residual(tree, q, dq, **pick("coriolis", "mass_matrix_dot")),
            "passivity": acceptance.passivity_residual(tree, q, dq, **pick("coriolis", "mass_matrix_dot")),
        }
    res["differences"] = max_differences(tree, q, dq)
    return res


def max_differences(tree, q, dq) -> dict:
    """max |physai - closed form| of M, g, C, Mdot over the states."""
    d = {"M": 0.0, "g": 0.0, "C": 0.0, "Mdot": 0.0}
    for qi, dqi in zip(q, dq):
        d["M"] = max(d["M"], np.abs(dyn.mass_matrix(tree, qi) - closed_M(qi)).max())
        d["g"] = max(d["g"], np.abs(dyn.gravity(tree, qi) - closed_g(qi)).max())
        d["C"] = max(d["C"], np.abs(coriolis_matrix(tree, qi, dqi) - closed_C(qi, dqi)).max())
        d["Mdot"] = max(d["Mdot"], np.abs(mass_matrix_dot(tree, qi, dqi) - closed_Mdot(qi, dqi)).max())
    return {k: float(v) for k, v in d.items()}


def fmt(x, digits=6) -> str:
    """A vector or matrix with fixed digits, -0 printed as 0."""
    a = np.round(np.asarray(x, dtype=float), digits) + 0.0
    return np.array2string(a, precision=digits, floatmode="fixed", separator=", ", max_line_width=10**6).replace("\n", "")


def main(n: int = 200) -> list[str]:
    lines: list[str] = []
    say = lines.append
    tree = point_mass_arm()
    v = quantities(tree)
    p, s = v["physai"], v["seed"]
    say("Seed 004 (section 6.2): the manipulator equation on the 2-DOF point-mass arm")
    say(f"  m1 = {M1} kg, m2 = {M2} kg, l1 = {L1} m, l2 = {L2} m, g = {G} m/s^2; q = {Q.tolist()} rad, "
        f"dq = {DQ.tolist()} rad/s, tau = {TAU.tolist()} N m")
    say("  physai: a Tree of two Body records (hinges about -y, point masses: mass at the link tip, zero rotational "
        "inertia); seed: its closed-form M, C (Christoffel form), g")
    say("  (the seed prints no numbers; 'seed:' below is its closed forms evaluated at the same state)")
    say("")
    B = BOUNDS
    say("Property 1: M symmetric positive definite")
    say(f"  physai M = {fmt(p['M'])} kg m^2, symmetric {np.array_equal(p['M'], p['M'].T)}, eigenvalues {fmt(p['eig'])}")
    say(f"  seed:  M = {fmt(s['M'])} kg m^2, symmetric {np.array_equal(s['M'], s['M'].T)}, eigenvalues {fmt(s['eig'])}")
    say(f"  max |M_physai - M_seed| {bound(np.abs(p['M'] - s['M']).max(), B['M'], 'kg m^2')}")
    say("Property 3: the torque that holds the pose is g(q)")
    for who, label, x in (("physai", "forward_dynamics(q, 0, g(q))", p), ("seed: ", "closed-form FD(q, 0, g(q))", s)):
        say(f"  {who} g(q) = {fmt(x['g'])} N m; max |{label}| {bound(np.abs(x['hold']).max(), B['hold'], 'rad/s^2')}")
    say(f"  max |g_physai - g_seed| {bound(np.abs(p['g'] - s['g']).max(), B['g'], 'N m')}")
    say("Forward then inverse dynamics")
    say(f"  physai ddq = {fmt(p['ddq'])} rad/s^2, rnea(q, dq, ddq) = {fmt(p['tau_back'])} N m "
        f"(|diff to tau| {bound(np.abs(p['tau_back'] - TAU).max(), B['roundtrip'])})")
    say(f"  seed:  ddq = {fmt(s['ddq'])} rad/s^2, M ddq + C dq + g = {fmt(s['tau_back'])} N m "
        f"(|diff to tau| {bound(np.abs(s['tau_back'] - TAU).max(), B['roundtrip'])})")
    say(f"  max |ddq_physai - ddq_seed| {bound(np.abs(p['ddq'] - s['ddq']).max(), B['ddq'], 'rad/s^2')}")
    say("Property 2: Mdot - 2C is skew-symmetric, dq^T (Mdot - 2C) dq = 0")
    say(f"  physai C = {fmt(p['C'])}, Mdot = {fmt(p['Mdot'])} (coriolis_matrix, mass_matrix_dot)")
    say(f"  seed:  C = {fmt(s['C'])}, Mdot = {fmt(s['Mdot'])}")
    say(f"  physai max |S + S^T| {bound(p['skew'], B['skew'])}, dq^T S dq {bound(p['passivity'], B['passivity'], 'W')}; "
        f"seed: max |S + S^T| {bound(s['skew'], B['skew'])}, dq^T S dq {bound(s['passivity'], B['passivity'], 'W')}")
    say("")
    r = four_checks(tree, n)
    say(f"The checks of physai.acceptance on {n} random states (q in [-pi, pi], dq in [-2, 2], tau in [-10, 10]): worst values")
    say(f"  {'check':<44} {'physai':>10} {'seed':>10}")
    labels = {"asymmetry": ("(a) max |M - M^T| [kg m^2]", "M"), "min_eigenvalue": ("(a) smallest eigenvalue of M [kg m^2]", None),
              "hold": ("(b) max |FD(q, 0, g(q))| [rad/s^2]", "hold"), "roundtrip": ("(c) max |ID(FD(tau)) - tau| [N m]", "roundtrip"),
              "coriolis": ("(d) max |C dq - (c - g)| [N m]", "coriolis"), "skew": ("(d) max |S + S^T| [N m s]", "skew"),
              "passivity": ("(d) max |dq^T S dq| [W]", "passivity")}
    for k, (label, key) in labels.items():
        cells = [f"{r[who][k]:.1e}" if key is None else bound(r[who][k], B[key], what=f"{who} {label}") for who in ("physai", "seed")]
        say(f"  {label:<44} {cells[0]:>10} {cells[1]:>10}")
    dd = r["differences"]
    say(f"  physai against the closed forms over the same states: max |diff| M {bound(dd['M'], B['M'], 'kg m^2')}, "
        f"g {bound(dd['g'], B['g'], 'N m')}, C {bound(dd['C'], B['C'], 'N m s')}, Mdot {bound(dd['Mdot'], B['C'], 'kg m^2/s')}")
    return lines


if __name__ == "__main__":
    text = "\n".join(main()) + "\n"
    print(text, end="")
    (HERE / "output.txt").write_text(text, encoding="utf-8", newline="\n")
