"""Energy-drift monitor: warn when a passive simulation gains or loses energy it cannot have.

Without actuators, friction or damping, E = T + U is constant; whatever a simulator adds or removes is
integration error. Simulators do not say so: no NaN, no exception (lesson 11, Break it). The monitor
does, with EnergyDriftWarning, once, when |E(t) - E0| passes `threshold_percent` of `scale`:

    monitor = EnergyMonitor(threshold_percent=5.0, scale=4.660, timestep=m.opt.timestep)
    for _ in range(steps):
        mujoco.mj_step(m, d)
        # needs <flag energy="enable"/>; after mj_step, d.energy belongs to the state at the start of the step
        monitor.update(d.energy[0] + d.energy[1], d.time - m.opt.timestep)

    check_energy_drift(energies, scale=4.660, threshold_percent=5.0)   # the same on a recorded series

`scale` is the energy the system can exchange [J], e.g. the potential energy a pendulum releases when
it swings from its release pose to hanging straight down; percentages of the total E would depend on
where the potential's zero lies. For a system with damping set dissipative=True: losses are physics
then, so only gains are flagged.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np

from physai import validation
from physai.exceptions import ShapeError


class EnergyDriftWarning(UserWarning):
    """The energy of a passive simulation drifted past the threshold: integration error, not physics."""


@dataclass(frozen=True)
class DriftEvent:
    """The first reading past the threshold: energy [J], reference E0 [J], drift [% of scale], time [s] if known."""

    energy: float
    reference: float
    percent: float
    time: float | None
    index: int


class EnergyMonitor:
    """Watches the total energy of a passive simulation, one reading per step, and warns once on drift.

    threshold_percent: allowed |E - E0| in % of scale (> 0)
    scale:             energy the system can exchange [J] (> 0)
    reference:         E0 [J]; None takes the first reading
    dissipative:       True if the system has damping: only gains count as drift
    timestep:          the simulation's step [s] (> 0), quoted in the advice; None leaves it out
    Each number must be a finite real number (not a string, array or bool): InvalidArgumentError otherwise.
    """

    def __init__(self, threshold_percent: float, scale: float, reference: float | None = None,
                 dissipative: bool = False, timestep: float | None = None):
        self.threshold_percent = validation.number("threshold_percent", threshold_percent, "% of scale", positive=True)
        self.scale = validation.number("scale", scale, "J, the energy the system can exchange", positive=True)
        self.reference = None if reference is None else validation.number("reference", reference, "J")
        self.dissipative = validation.flag("dissipative", dissipative)
        self.timestep = None if timestep is None else validation.number("timestep", timestep, "s", positive=True)
        self.count = 0
        self.peak_percent = 0.0              # largest |E - E0| so far [% of scale]
        self.last_percent = 0.0              # E - E0 of the latest reading [% of scale]
        self.event: DriftEvent | None = None  # the first reading past the threshold

    def update(self, energy: float, time: float | None = None) -> float:
        """Record one energy reading [J] (at `time` [s]); returns E - E0 in % of scale. Warns on the first excess."""
        energy = float(_reading("energy", energy))
        time = None if time is None else validation.number("time", time, "s")
        if self.reference is None:
            self.reference = energy
        percent = (energy - self.reference) / self.scale * 100.0
        self.last_percent = percent
        self.peak_percent = max(self.peak_percent, abs(percent)) if math.isfinite(percent) else math.inf
        counted = percent if self.dissipative else abs(percent)
        if self.event is None and not counted <= self.threshold_percent:      # NaN counts as drift
            self.event = DriftEvent(energy, self.reference, percent, time, self.count)
            warnings.warn(self.message(), EnergyDriftWarning, stacklevel=2)
        self.count += 1
        return percent

    @property
    def drifted(self) -> bool:
        """Whether a reading has passed the threshold."""
        return self.event is not None

    def message(self) -> str:
        """The warning text for the first excess (empty if none)."""
        e = self.event
        if e is None:
            return ""
        when = f"at t = {e.time:.3f} s" if e.time is not None else f"at reading {e.index}"
        step = f" than {self.timestep * 1000:g} ms" if self.timestep else ""
        kind = "gained" if not e.percent < 0 else "lost"
        return (f"energy of a passive system {kind} {e.percent:+.3f}% of {self.scale:.3f} J {when} "
                f"(threshold {self.threshold_percent:g}%): this is integration error, not physics; "
                f"use a smaller timestep{step} or the RK4 integrator")


def check_energy_drift(energies, scale: float, threshold_percent: float, reference: float | None = None,
                       times=None, dissipative: bool = False, timestep: float | None = None) -> EnergyMonitor:
    """Run an EnergyMonitor over a recorded energy series [J] (with times [s] if given); returns the monitor.

    Warns with EnergyDriftWarning at the first reading past the threshold; reference defaults to the first reading.
    times, if given, has one entry per reading (ShapeError otherwise).
    """
    monitor = EnergyMonitor(threshold_percent, scale, reference, dissipative, timestep)
    energies = _reading("energies", energies, 1)
    if times is not None and len(times) != len(energies):
        raise ShapeError(f"times has {len(times)} entries, energies has {len(energies)}; give one time per reading")
    times = [None] * len(energies) if times is None else times
    for energy, t in zip(energies, times, strict=True):
        monitor.update(energy, t)
    return monitor


def _reading(name: str, x, ndim: int = 0) -> np.ndarray:
    """x as a float array of ndim dimensions: one energy [J] or a series (n,); NaN and infinity are readings (drift)."""
    a = validation.to_float(name, x, "one number [J]" if ndim == 0 else "a series (n,) of numbers [J]")
    if a.ndim != ndim:
        raise ShapeError(f"{name} has shape {a.shape}; expected " + ("one number [J]" if ndim == 0 else
                                                                     "a series (n,) of readings [J], one per step"))
    return a
