"""The compiled engine's threads (cpp/parallel.h): PHYSAI_NUM_THREADS's rule, the same in C++ and Python; a call whose
threads the system refuses still computes its result on the threads that started (or the calling thread); and a
signal (Ctrl-C) stops a long compiled run with KeyboardInterrupt."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from physai import engine, integrators
from physai.engine import native

_ext = native._ext


@pytest.fixture
def thread_limit():
    """_native._set_thread_limit (test-only), reset to no limit afterwards."""
    yield _ext._set_thread_limit
    _ext._set_thread_limit(-1)


def test_num_threads_rule_is_the_same_in_cpp_and_python(monkeypatch, compiled_backend):
    hardware, limit = _ext.hardware_threads(), _ext.max_threads()
    assert limit == min(256, 4 * hardware)
    monkeypatch.delenv("PHYSAI_NUM_THREADS", raising=False)
    assert native.threads() == hardware and native.threads_note() == ""
    valid = {"1": 1, "2": 2, "007": 7 if limit >= 7 else None, str(limit): limit}
    capped = ["99999999999999", str(limit + 1), "1" * 40]
    invalid = ["", "1e9", "abc", "0", "00", "-2", "+4", " 4", "4 ", "4.0", "4_0", "\u0663"]
    for value in capped:
        monkeypatch.setenv("PHYSAI_NUM_THREADS", value)
        count, why = native.thread_request(value, hardware)
        assert native.threads() == count == limit and "capped" in why and native.threads_note() == why, value
    for value in [*valid, *invalid]:
        monkeypatch.setenv("PHYSAI_NUM_THREADS", value)
        count, why = native.thread_request(value, hardware)
        assert native.threads() == count, value                  # C++ parse_threads agrees with thread_request
        if valid.get(value):
            assert count == valid[value] and why == "" and native.threads_note() == ""
        else:
            assert count == hardware and "ignored" in why and native.threads_note() == why, value
    monkeypatch.setenv("PHYSAI_NUM_THREADS", "1e9")
    assert "PHYSAI_NUM_THREADS='1e9' ignored: not a whole number" in native.describe()


@pytest.mark.parametrize("started", [1, 0])
def test_refused_threads_still_compute_the_result(monkeypatch, thread_limit, started):
    """Threads past `started` fail to start (as std::thread's std::system_error): the result is the one-thread one."""
    model = engine.as_model("arm7")
    q, qd = engine.random_states(model, 20000, 3)
    q0, qd0 = q[:40], qd[:40]
    monkeypatch.setenv("PHYSAI_NUM_THREADS", "1")
    M1, E1 = engine.mass_matrix(model, q), engine.energy(model, q, qd)
    R1 = integrators.rollout(model, q0, qd0, 1e-3, 50, "rk4", energy=True, constraints=False)
    monkeypatch.setenv("PHYSAI_NUM_THREADS", str(_ext.max_threads()))
    thread_limit(started)
    M, E = engine.mass_matrix(model, q), engine.energy(model, q, qd)
    R = integrators.rollout(model, q0, qd0, 1e-3, 50, "rk4", energy=True, constraints=False)
    # the same operations on every partition of the batch (cpp/lanes.h); compared, as every result across batch
    # partitions, with a bound: a few units of the last place
    for got, want, bound in [(M, M1, 1e-15), (E, E1, 1e-15), (R.q, R1.q, 1e-14), (R.qd, R1.qd, 1e-14),
                             (R.energy, R1.energy, 1e-14)]:
        assert np.max(np.abs(got - want)) <= bound * max(1.0, np.max(np.abs(want)))


# a long compiled run in a child process: "ready" on stdout just before the call
LONG_RUNS = {
    "simulate": "integrators.simulate(model, q[0], qd[0], 1e-4, 3_000_000, 'rk4')",
    "rollout_implicit": "integrators.rollout(model, q[:8], qd[:8], 1e-4, 400_000, 'implicit')",
    "energy_batch": "engine.energy(model, np.broadcast_to(q[0], (30_000_000, model.nq)), "
                    "np.broadcast_to(qd[0], (30_000_000, model.nv)))",
}


def _interrupt(script: str, delay: float) -> tuple[str, str, int, float]:
    """Run `script` in a child process, send it SIGINT `delay` s after it prints "ready": (stdout, stderr, exit status,
    seconds from the signal to the child's end)."""
    env = {**os.environ, "PHYSAI_NUM_THREADS": "2"}
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(delay)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        waited = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return out, err, child.returncode, waited


@pytest.mark.parametrize("run", LONG_RUNS)
def test_ctrl_c_stops_a_long_compiled_run(run):
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        from physai import engine, integrators
        model = engine.as_model("arm7")
        q, qd = engine.random_states(model, 8, 1)
        print("ready", flush=True)
        {LONG_RUNS[run]}
        print("finished", flush=True)
    """)
    out, err, status, waited = _interrupt(script, 0.5)
    assert "finished" not in out, "the run ended before the signal: make it longer"
    assert status != 0 and "KeyboardInterrupt" in err, err
    assert waited < 2.0, waited


@pytest.mark.parametrize("delay", [0.2, 1.0])
def test_ctrl_c_stops_a_large_constrained_rollout_during_its_setup(delay):
    """rollout(N=1000, steps=20000, constraints=True) of a box on a plane: its outputs' first touch (the system zeroing
    gigabytes of pages) takes seconds before a trajectory steps; a signal then stops the call within the bound too."""
    script = textwrap.dedent("""
        import mujoco
        import numpy as np
        from physai import engine, integrators
        xml = ('<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body pos="0 0 .2"><freejoint/>'
               '<geom type="box" size=".05 .05 .05"/></body></worldbody></mujoco>')
        model = engine.from_mujoco(mujoco.MjModel.from_xml_string(xml))
        q, qd = np.tile([0, 0, .2, 1, 0, 0, 0], (1000, 1)), np.zeros((1000, 6))
        print("ready", flush=True)
        integrators.rollout(model, q, qd, 1e-3, 20000, "euler", constraints=True)
        print("finished", flush=True)
    """)
    out, err, status, waited = _interrupt(script, delay)
    assert "finished" not in out, "the run ended before the signal: make it longer"
    assert status != 0 and "KeyboardInterrupt" in err, err
    assert waited < 2.0, waited


def test_batches_from_python_threads_at_once_equal_one_thread(monkeypatch):
    """Batch calls from several Python threads at once (the GIL released in each): one takes the worker pool, the
    others start threads of their own (cpp/parallel.h); every result equals the one-thread result."""
    import threading

    model = engine.as_model("arm7")
    q, qd = engine.random_states(model, 4000, 5)
    monkeypatch.setenv("PHYSAI_NUM_THREADS", "1")
    expected = engine.mass_matrix(model, q), engine.energy(model, q, qd)
    monkeypatch.setenv("PHYSAI_NUM_THREADS", "2")
    results, errors = [None] * 6, []

    def work(k):
        try:
            for _ in range(5):
                results[k] = engine.mass_matrix(model, q), engine.energy(model, q, qd)
        except Exception as e:                                   # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    for M, E in results:
        assert np.abs(M - expected[0]).max() <= 1e-12 * np.abs(expected[0]).max()
        assert np.abs(E - expected[1]).max() <= 1e-12 * np.abs(expected[1]).max()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_runs_batches_on_a_pool_of_its_own():
    """The parent's worker threads do not exist in a forked child: its batch calls start a new pool and finish."""
    script = textwrap.dedent("""
        import os, sys
        import numpy as np
        from physai import engine
        model = engine.as_model("arm7")
        q, qd = engine.random_states(model, 4000, 2)
        M = engine.mass_matrix(model, q)                          # the parent's pool started
        pid = os.fork()
        if pid == 0:
            ok = np.abs(engine.mass_matrix(model, q) - M).max() <= 1e-12 * np.abs(M).max()
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), flush=True)
    """)
    env = {**os.environ, "PHYSAI_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and "child 0" in out.stdout, out.stderr


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="signal.setitimer is POSIX only")
def test_a_signal_handler_may_run_batches_during_a_batch(monkeypatch):
    """A Python signal handler runs on the calling thread while it watches a long batch (cpp/parallel.h's poll); a batch
    call from the handler runs on threads and workspaces of its own, and both results are right."""
    model = engine.as_model("arm7")
    q, qd = engine.random_states(model, 2000, 6)
    big_q, big_qd = np.broadcast_to(q[0], (3_000_000, model.nq)), np.broadcast_to(qd[0], (3_000_000, model.nv))
    monkeypatch.setenv("PHYSAI_NUM_THREADS", "1")
    expected_M, expected_E = engine.mass_matrix(model, q), engine.energy(model, q[:1], qd[:1])[0]
    monkeypatch.setenv("PHYSAI_NUM_THREADS", "2")
    inner = []

    def handler(signum, frame):
        inner.append(engine.mass_matrix(model, q))

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        E = engine.energy(model, big_q, big_qd)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(inner) == 1, "the batch ended before the signal: make it longer"
    assert np.abs(inner[0] - expected_M).max() <= 1e-12 * np.abs(expected_M).max()
    assert np.abs(E - expected_E).max() <= 1e-12 * abs(expected_E)


def test_ctrl_c_stops_a_long_batch_of_constrained_derivatives():
    """step_derivatives(constraints=True) of 400,000 states of a body on four spheres resting on a plane, the batch in
    one compiled call (derivatives._one_call) whose calling thread is one of its two (parallel_pieces<true>: it polls
    for signals between its states): a signal stops it within the bound."""
    script = textwrap.dedent("""
        import mujoco
        import numpy as np
        from physai import derivatives, engine
        feet = "".join(f'<geom type="sphere" size=".1" pos="{x} {y} 0"/>' for x in (-.2, .2) for y in (-.2, .2))
        xml = ('<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body pos="0 0 .099"><freejoint/>' + feet +
               '</body></worldbody></mujoco>')
        m = mujoco.MjModel.from_xml_string(xml)
        model = engine.from_mujoco(m)
        q, qd = np.tile(m.qpos0, (400_000, 1)), np.tile([.1, 0, 0, 0, 0, 0], (400_000, 1))
        derivatives.step_derivatives(model, q[:2], qd[:2], constraints=True)
        print("ready", flush=True)
        derivatives.step_derivatives(model, q, qd, constraints=True)
        print("finished", flush=True)
    """)
    out, err, status, waited = _interrupt(script, 0.5)
    assert "finished" not in out, "the run ended before the signal: make it longer"
    assert status != 0 and "KeyboardInterrupt" in err, err
    assert waited < 2.0, waited
