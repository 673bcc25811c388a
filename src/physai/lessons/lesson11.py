"""Lesson 11 · Rigid-body dynamics: the double pendulum's hand formulas and the energy-drift table.

    p = PendulumParams.from_model(models.load("double_pendulum"))
    hand_mass_matrix(p, q), hand_bias(p, q, qd), hand_inverse(p, q, qd, qdd), hand_forward(p, q, qd, tau)
    lesson_states()                                  # the 1000 random states (seed 0) of Result 1
    random_poses(m, count), mj_state(m, d, q, qd), full_mass(m, d)   # Build it's poses and MuJoCo's quantities

    table = EnergyTable(TIMESTEPS, scale=releasable_energy(tree))
    table.add("Euler", mujoco_energy_run(m, "Euler"))    # one row per source; add more sources at will
    print(table.format())

The pendulum swings in the x-z plane on hinges about y; q = 0 is horizontal, a positive angle turns a link down.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np

from physai import dynamics, engine, forces, integrators, models, validation
from physai.exceptions import InvalidArgumentError, InvalidModelError

#: The lesson's timesteps for the energy table [s].
TIMESTEPS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02)
#: MuJoCo's integrators by the lesson's names: physai.integrators.MUJOCO_INTEGRATOR, spelled as the lesson does.
INTEGRATORS = {label: mujoco.mjtIntegrator(integrators.MUJOCO_INTEGRATOR[label.lower()])
               for label in ("Euler", "RK4", "implicit", "implicitfast")}
#: The local Menagerie SO-101 is a slightly older revision than the one the lesson printed.
SO101_REVISION_NOTE = ("SO-101: these g(q) come from the local Menagerie mirror, a slightly older revision of the model; "
                       "the lesson used a later model revision, so its printed g(q) differ from ours by up to about 0.004 N m.")
#: Release pose (both links horizontal) and rest pose (hanging straight down) [rad].
HORIZONTAL = np.array([0.0, 0.0])
HANGING = np.array([np.pi / 2, 0.0])


# ---- the hand formulas ----

@dataclass(frozen=True)
class PendulumParams:
    """The double pendulum's parameters in the lesson's symbols.

    m1, m2 [kg]; l1 link-1 length (elbow offset) [m]; c1, c2 centre of mass along each link [m];
    I1, I2 inertia about each centre of mass, about the hinge axis [kg m^2]; g gravity [m/s^2].
    """

    m1: float
    l1: float
    c1: float
    I1: float
    m2: float
    c2: float
    I2: float
    g: float

    @classmethod
    def from_model(cls, m: mujoco.MjModel) -> "PendulumParams":
        """Read the parameters from a compiled double_pendulum model (static data only)."""
        if m.nbody != 3 or m.njnt != 2 or not np.allclose(m.jnt_axis, [0, 1, 0]) or np.abs(m.body_ipos[1:, 1:]).max() > 0:
            raise InvalidModelError("not the lesson's double pendulum: expected two links along x with hinges about y")
        y = np.array([0.0, 1.0, 0.0])
        inertia = []
        for b in (1, 2):                               # inertia about the hinge axis, through the centre of mass
            R = np.zeros(9)
            mujoco.mju_quat2Mat(R, m.body_iquat[b])
            R = R.reshape(3, 3)
            inertia.append(float(y @ R @ np.diag(m.body_inertia[b]) @ R.T @ y))
        return cls(m1=float(m.body_mass[1]), l1=float(m.body_pos[2, 0]), c1=float(m.body_ipos[1, 0]), I1=inertia[0],
                   m2=float(m.body_mass[2]), c2=float(m.body_ipos[2, 0]), I2=inertia[1], g=float(-m.opt.gravity[2]))


def hand_mass_matrix(p: PendulumParams, q: np.ndarray) -> np.ndarray:
    """M(q) (2, 2) [kg m^2] from the lesson's formula."""
    c = np.cos(q[1])
    m12 = p.m2 * (p.c2**2 + p.l1 * p.c2 * c) + p.I2
    m11 = p.m1 * p.c1**2 + p.I1 + p.m2 * (p.l1**2 + p.c2**2 + 2 * p.l1 * p.c2 * c) + p.I2
    return np.array([[m11, m12], [m12, p.m2 * p.c2**2 + p.I2]])


def hand_coriolis(p: PendulumParams, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """C(q, qd) qd (2,) [N m]: a sin q2 (-(2 qd1 qd2 + qd2^2), qd1^2) with a = m2 l1 c2."""
    a = p.m2 * p.l1 * p.c2
    return a * np.sin(q[1]) * np.array([-(2 * qd[0] * qd[1] + qd[1] ** 2), qd[0] ** 2])


def hand_potential(p: PendulumParams, q: np.ndarray) -> float:
    """Potential energy U(q) [J], zero with both links horizontal (a link turning down loses height)."""
    return -p.g * ((p.m1 * p.c1 + p.m2 * p.l1) * np.sin(q[0]) + p.m2 * p.c2 * np.sin(q[0] + q[1]))


def hand_gravity(p: PendulumParams, q: np.ndarray) -> np.ndarray:
    """g(q) = dU/dq (2,) [N m]."""
    far = p.m2 * p.c2 * np.cos(q[0] + q[1])
    return -p.g * np.array([(p.m1 * p.c1 + p.m2 * p.l1) * np.cos(q[0]) + far, far])


def hand_bias(p: PendulumParams, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """c = C(q, qd) qd + g(q) (2,) [N m], MuJoCo's qfrc_bias."""
    return hand_coriolis(p, q, qd) + hand_gravity(p, q)


def hand_inverse(p: PendulumParams, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """tau = M(q) qdd + C(q, qd) qd + g(q) (2,) [N m]."""
    return hand_mass_matrix(p, q) @ qdd + hand_bias(p, q, qd)


def hand_forward(p: PendulumParams, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """qdd = M(q)^-1 (tau - c(q, qd)) (2,) [rad/s^2]."""
    return np.linalg.solve(hand_mass_matrix(p, q), tau - hand_bias(p, q, qd))


def random_poses(m: mujoco.MjModel, count: int, rng=0) -> np.ndarray:
    """(count, nv) joint positions, uniform within each limited joint's range, else in [-pi, pi]; rng a seed or a
    numpy Generator (drawn from)."""
    jnt = m.dof_jntid
    lo = np.where(m.jnt_limited[jnt], m.jnt_range[jnt, 0], -np.pi)
    hi = np.where(m.jnt_limited[jnt], m.jnt_range[jnt, 1], np.pi)
    return np.random.default_rng(rng).uniform(lo, hi, (count, m.nv))


def mj_state(m: mujoco.MjModel, d: mujoco.MjData, q, qd=None) -> mujoco.MjData:
    """d after mj_forward at (q, qd) with no applied forces."""
    d.qpos[:], d.qvel[:] = q, 0.0 if qd is None else qd
    d.qfrc_applied[:], d.ctrl[:] = 0.0, 0.0
    mujoco.mj_forward(m, d)
    return d


def full_mass(m: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    """Dense M of the state in d (after mj_forward) [kg m^2]."""
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return M


def lesson_states(count: int = 1000, seed: int = 0):
    """The lesson's random states: arrays q, qd, qdd of shape (count, 2).

    q in [-pi, pi] rad, qd in [-5, 5] rad/s, qdd in [-20, 20] rad/s^2, drawn state by state from default_rng(seed).
    """
    rng = np.random.default_rng(seed)
    draws = [(rng.uniform(-np.pi, np.pi, 2), rng.uniform(-5, 5, 2), rng.uniform(-20, 20, 2)) for _ in range(count)]
    return tuple(np.array(x) for x in zip(*draws))


def euler_simulation(tree: dynamics.Tree, timestep: float, steps: int, q0: np.ndarray = HORIZONTAL,
                     qd0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Build it, Step 5: physai's forward dynamics plus semi-implicit Euler in MuJoCo's order, no applied forces.

    timestep [s]; returns the final q [rad], qd [rad/s] and the energy [J] of every state, (steps + 1,), E0 first.
    """
    q = np.array(q0, dtype=float)
    qd = np.zeros(tree.nv) if qd0 is None else np.array(qd0, dtype=float)
    tau = np.zeros(tree.nv)
    energy = np.empty(steps + 1)
    energy[0] = dynamics.energy(tree, q, qd)
    for k in range(1, steps + 1):
        qd = qd + timestep * dynamics.forward_dynamics(tree, q, qd, tau)   # new speed first...
        q = q + timestep * qd                                              # ...then the angle from the new speed
        energy[k] = dynamics.energy(tree, q, qd)
    return q, qd, energy


def so101_poses(m: mujoco.MjModel) -> dict[str, np.ndarray]:
    """The lesson's SO-101 poses [rad]: stretched forward (all 0) and folded (shoulder_lift -1.57, elbow_flex 1.57)."""
    folded = np.zeros(m.nq)
    folded[m.joint("shoulder_lift").qposadr[0]] = -1.57
    folded[m.joint("elbow_flex").qposadr[0]] = 1.57
    return {"stretched (all 0)": np.zeros(m.nq), "folded (lift -1.57, elbow 1.57)": folded}


def releasable_energy(tree: dynamics.Tree, release: np.ndarray = HORIZONTAL, rest: np.ndarray = HANGING) -> float:
    """Energy [J] the pendulum can release: potential energy at the release pose minus hanging straight down."""
    return dynamics.potential_energy(tree, release) - dynamics.potential_energy(tree, rest)


def damped_pendulum(damping: float) -> mujoco.MjModel:
    """The bundled double pendulum with damping="<damping>" [N m s/rad] added to both joints (Check yourself, Hard)."""
    xml = models.model_path("double_pendulum").read_text(encoding="utf-8")
    damped = xml.replace('type="hinge"', f'type="hinge" damping="{damping:g}"')
    if damped.count("damping=") != 2:
        raise InvalidModelError("expected two hinge joints in double_pendulum.xml")
    return mujoco.MjModel.from_xml_string(damped)


# ---- the energy-drift table ----

#: A simulation to measure: (timestep [s], duration [s]) -> (E0 [J], energy after each step [J], one per step).
EnergyRun = Callable[[float, float], tuple[float, np.ndarray]]


#: the most steps an energy run takes (its readings are kept, and MuJoCo's are taken one by one in Python)
MAX_STEPS = 10**8


def run_steps(timestep: float, duration: float) -> int:
    """round(duration / timestep), the steps of a run; InvalidArgumentError unless both are finite numbers > 0 [s]
    giving 1 to MAX_STEPS steps."""
    timestep = validation.number("timestep", timestep, "s", positive=True)
    duration = validation.number("duration", duration, "s", positive=True)
    steps = round(duration / timestep)
    if not 1 <= steps <= MAX_STEPS:
        raise InvalidArgumentError(f"a run of {duration:g} s at a timestep of {timestep:g} s takes {steps:g} steps; "
                                   f"expected 1 to {MAX_STEPS:g} (a timestep within the duration, and not too small)")
    return steps


class MujocoEnergyRun:
    """A passive run of a MuJoCo model with one of INTEGRATORS, from (qpos, qvel) (default: qpos0, at rest).

    Call it as an EnergyRun: run(timestep [s], duration [s]) -> (E0 [J], energy after each mj_step [J]).
    Energy is read as d.energy[0] + d.energy[1] after each mj_step. MuJoCo computes it in mj_forward before
    integrating, so the k-th reading belongs to the state at the start of step k (the first reading is E0).
    RK4 is the exception: each of its four stages runs mj_forward, so after an RK4 mj_step d.energy is its
    last stage's, (q + h qd_3, qd + h qdd_3), neither the start nor the end state (physai.integrators.rk4_stages;
    PhysaiEnergyRun(..., rk4_last_stage=True) reads there too). Unknown integrator: InvalidArgumentError.
    watch(energy [J], time [s]) is called with each reading and the time of the state it belongs to,
    e.g. EnergyMonitor.update. The model is copied (`m` is left unchanged); `model` and `data` hold the last run.
    """

    def __init__(self, m: mujoco.MjModel, integrator: str, qpos: np.ndarray | None = None,
                 qvel: np.ndarray | None = None, watch: Callable[[float, float], object] | None = None):
        if integrator not in INTEGRATORS:
            raise InvalidArgumentError(f"unknown integrator {integrator!r}; expected one of {', '.join(INTEGRATORS)}")
        self.model = copy.copy(m)
        self.model.opt.integrator = INTEGRATORS[integrator]
        self.model.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
        self.data = mujoco.MjData(self.model)
        self.qpos, self.qvel, self.watch = qpos, qvel, watch

    def __call__(self, timestep: float, duration: float) -> tuple[float, np.ndarray]:
        m, d = self.model, self.data
        m.opt.timestep = timestep
        mujoco.mj_resetData(m, d)
        if self.qpos is not None:
            d.qpos[:] = self.qpos
        if self.qvel is not None:
            d.qvel[:] = self.qvel
        mujoco.mj_forward(m, d)
        e0 = d.energy[0] + d.energy[1]
        energy = np.empty(run_steps(timestep, duration))
        for k in range(len(energy)):
            mujoco.mj_step(m, d)
            energy[k] = d.energy[0] + d.energy[1]
            if self.watch is not None:
                self.watch(energy[k], k * timestep)
        return float(e0), energy


def mujoco_energy_run(m: mujoco.MjModel, integrator: str, qpos: np.ndarray | None = None,
                      qvel: np.ndarray | None = None, watch: Callable[[float, float], object] | None = None) -> MujocoEnergyRun:
    """Shorthand for MujocoEnergyRun(m, integrator, qpos, qvel, watch)."""
    return MujocoEnergyRun(m, integrator, qpos, qvel, watch)


class PhysaiEnergyRun:
    """A passive run of physai's own simulator (physai.integrators), from q0 at rest (default: horizontal).

    Call it as an EnergyRun: run(timestep [s], duration [s]) -> (E0 [J], energy of the state at the start of
    each step [J]), the reading convention of MujocoEnergyRun. MuJoCo's RK4 reads d.energy at its last stage
    instead; rk4_last_stage=True reads there too (rk4_last_stages over the whole trajectory at once), to compare
    like with like. The tree is compiled once (physai.engine.compile_tree); the energies come from the engine.
    """

    def __init__(self, tree: dynamics.Tree, integrator: str, q0: np.ndarray = HORIZONTAL, rk4_last_stage: bool = False):
        self.tree, self.integrator, self.q0, self.rk4_last_stage = tree, integrator.lower(), q0, rk4_last_stage
        self.model = engine.compile_tree(tree)

    def __call__(self, timestep: float, duration: float) -> tuple[float, np.ndarray]:
        steps = run_steps(timestep, duration)
        run = integrators.simulate(self.model, self.q0, np.zeros(self.model.nv), timestep, steps, self.integrator)
        energy = run.energy[:-1]
        if self.rk4_last_stage:
            energy = engine.energy(self.model, *rk4_last_stages(self.model, run.q[:-1], run.qd[:-1], timestep))
        return float(run.energy[0]), energy


def rk4_last_stages(model, q: np.ndarray, qd: np.ndarray, timestep: float) -> tuple[np.ndarray, np.ndarray]:
    """Stage 4 of an RK4 step from each of N states at once, passive forces only: (q4 (N, nq), qd4 (N, nv)).

    The stages of physai.integrators.rk4_stages, each a batched engine call over all N states: stage 1 is
    (q, qd); stage i + 1 is (q (+) h c qd_i, qd + h c qdd_i), c = 1/2, 1/2, 1, with qdd_i the forward dynamics
    under the passive joint forces. Stage 4, (q (+) h qd_3, qd + h qdd_3), is where MuJoCo's RK4 leaves d.energy.
    """
    model = engine.as_model(model)
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    qi, qdi = q, qd
    for c in (0.5, 0.5, 1.0):                        # stage i + 1 uses only stage i (MuJoCo's A is diagonal)
        qdd = engine.forward_dynamics(model, qi, qdi, forces.damper_spring_force(model, qi.T, qdi.T).T)
        qi, qdi = engine.integrate(model, q, c * qdi, timestep), qd + timestep * (c * qdd)
    return qi, qdi


@dataclass(frozen=True)
class EnergyCell:
    """One run's energy error in % of the table's scale: peak = max |E(t) - E0|, final = E(T) - E0."""

    peak: float
    final: float
    drift: np.ndarray = field(repr=False, compare=False)   # (E(t) - E0) / scale * 100 after each step [%]

    @classmethod
    def from_run(cls, e0: float, energy: np.ndarray, scale: float) -> "EnergyCell":
        drift = (np.asarray(energy) - e0) / scale * 100.0
        return cls(float(np.abs(drift).max()), float(drift[-1]), drift)

    def __str__(self) -> str:
        return f"{self.peak:.3f} / {self.final:+.3f}"


@dataclass
class EnergyTable:
    """Energy error of passive runs: one row per source (integrator, simulator), one column per timestep.

    timesteps [s]; scale [J], the energy the cells are a percentage of; duration of each run [s].
    Add a source with add(label, run); format(sources_as="columns") prints each source as a column instead.
    """

    timesteps: tuple[float, ...]
    scale: float
    duration: float = 10.0
    rows: dict[str, list[EnergyCell]] = field(default_factory=dict)

    def add(self, label: str, run: EnergyRun) -> list[EnergyCell]:
        """Run `run` at every timestep and keep the cells under `label`."""
        self.rows[label] = [EnergyCell.from_run(*run(dt, self.duration), self.scale) for dt in self.timesteps]
        return self.rows[label]

    def cell(self, label: str, timestep: float) -> EnergyCell:
        """The cell of source `label` at `timestep` [s]."""
        return self.rows[label][self.timesteps.index(timestep)]

    def identical(self, a: str, b: str, other: "EnergyTable | None" = None) -> bool:
        """Whether source a and source b (of `other`, default this table) gave bit-identical energy series at every
        timestep."""
        theirs = (self if other is None else other).rows[b]
        return all(np.array_equal(x.drift, y.drift) for x, y in zip(self.rows[a], theirs))

    def halving_ratios(self, label: str) -> list[tuple[float, float, float]]:
        """(dt, 2 dt, |final(2 dt)| / |final(dt)|) for each pair of timesteps that differ by a factor of two."""
        out = []
        for i, dt in enumerate(self.timesteps):
            if 2 * dt in self.timesteps:
                j = self.timesteps.index(2 * dt)
                out.append((dt, 2 * dt, abs(self.rows[label][j].final) / abs(self.rows[label][i].final)))
        return out

    def format(self, sources_as: str = "rows") -> str:
        """The table as aligned text; each cell 'peak / final' in %."""
        steps = [f"{dt * 1000:g} ms" for dt in self.timesteps]
        labels = list(self.rows)
        if sources_as == "rows":
            head, body = ["integrator", *steps], [[lab, *map(str, self.rows[lab])] for lab in labels]
        elif sources_as == "columns":
            head = ["dt", *labels]
            body = [[s, *(str(self.rows[lab][i]) for lab in labels)] for i, s in enumerate(steps)]
        else:
            raise InvalidArgumentError(f"sources_as must be 'rows' or 'columns', got {sources_as!r}")
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in [head, *body]]
        return "\n".join(line.rstrip() for line in lines)
