# Section 6.2's worked example (the manipulator equation of a point-mass two-link arm) as printed in
# seed 004_f385edd1b0e306eb.txt (../shared/seeds/), from "import numpy as np" to its last print, typed as printed: its
# extraction kept line breaks, quotes and exponents, so nothing needed repair.
# Kept for tests/test_listings.py, which runs it and checks what it prints.

import numpy as np

# 2-DOF planar arm in a vertical plane, point masses at link tips.
m1, m2 = 1.5, 1.0       # link masses (kg)
l1, l2 = 0.5, 0.4       # link lengths (m)
g_acc  = 9.81           # gravity (m/s^2)

def manipulator_matrices(q, dq):
    """Return M(q), C(q,dq), g(q) for the 2-link planar arm."""
    q1, q2 = q
    dq1, dq2 = dq
    c2, s2 = np.cos(q2), np.sin(q2)

    # --- Inertia matrix M(q) (symmetric, configuration dependent) ---
    a = m1 * l1**2 + m2 * (l1**2 + l2**2 + 2 * l1 * l2 * c2)
    b = m2 * (l2**2 + l1 * l2 * c2)
    d = m2 * l2**2
    M = np.array([[a, b],
                  [b, d]])

    # --- Coriolis / centrifugal matrix C(q,dq) (Christoffel form) ---
    h = -m2 * l1 * l2 * s2
    C = np.array([[h * dq2, h * (dq1 + dq2)],
                  [-h * dq1, 0.0]])

    # --- Gravity vector g(q) ---
    c1   = np.cos(q1)
    c12  = np.cos(q1 + q2)
    g1 = (m1 + m2) * g_acc * l1 * c1 + m2 * g_acc * l2 * c12
    g2 = m2 * g_acc * l2 * c12
    g = np.array([g1, g2])
    return M, C, g

# Pick an arbitrary configuration and velocity.
q  = np.array([0.4, -0.7])
dq = np.array([1.2,  0.9])
M, C, g = manipulator_matrices(q, dq)

# Property 1: M is symmetric positive definite.
print("M symmetric :", np.allclose(M, M.T))
print("M eigvals   :", np.linalg.eigvals(M))   # all strictly > 0

# Property 3: torque to simply hold this pose equals g(q).
tau_hold = g
print("gravity hold torque tau = g(q):", tau_hold)

# Forward dynamics: given a torque, solve for joint acceleration.
tau   = np.array([2.0, 0.5])
ddq   = np.linalg.solve(M, tau - C @ dq - g)
print("forward-dynamics ddq        :", ddq)

# Inverse dynamics round-trip recovers the same torque.
tau_back = M @ ddq + C @ dq + g
print("inverse-dynamics tau        :", tau_back, "(matches input)")

# Property 2: dM/dt - 2C is skew-symmetric.
# dM/dt = (dM/dq2) * dq2 here, since M depends only on q2.
dMdq2 = np.array([[-2 * m2 * l1 * l2 * np.sin(q[1]),
                   -m2 * l1 * l2 * np.sin(q[1])],
                  [-m2 * l1 * l2 * np.sin(q[1]), 0.0]])
Mdot  = dMdq2 * dq[1]
S = Mdot - 2 * C
print("skew-symmetric (S = -S^T)  :", np.allclose(S, -S.T))
print("passivity dq^T S dq ~ 0    :", float(dq @ S @ dq))
