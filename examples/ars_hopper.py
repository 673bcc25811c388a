"""A linear policy for Hopper-v5 trained by augmented random search, NumPy only, on physai's batched environments.

    uv run python examples/ars_hopper.py                          # 100 iterations on physai/Hopper-v5
    uv run python examples/ars_hopper.py --env Hopper-v5          # the same on Gymnasium's own environments
    uv run python examples/ars_hopper.py --iterations 100 --seed 1

Augmented random search, version V2-t (Mania, Guy and Recht, "Simple random search provides a competitive approach to
reinforcement learning", 2018, Algorithm 2): the policy is u = W (x - mu) / sigma, with mu and sigma the running mean
and standard deviation of every state seen. Each iteration draws N directions delta_k (entries N(0, 1)), runs one
episode with W + nu delta_k and one with W - nu delta_k (2N environments of one vector environment, stepped together),
keeps the b directions whose better return is largest and moves W by alpha / (b sigma_R) sum (R+ - R-) delta_k,
sigma_R the standard deviation of those 2b returns. As in the paper, training returns leave out Hopper's survival bonus
(its healthy_reward, 1 a step). After every `--every` iterations the policy W, without noise, is evaluated on
`--episodes` episodes of the ordinary reward; the example prints that curve and the time it took.

Reproducible: the directions and the training episodes' reset seeds come from numpy.random.default_rng(seed); every
evaluation resets its environments from the seed itself (the same start states each time), so the curve does not
depend on how often it is evaluated and a shorter run is the start of a longer one. main(argv) returns (the iterations
evaluated, their mean returns, seconds); tests/test_examples.py runs a short run.
"""

import argparse
import time

import gymnasium
import numpy as np

import physai.envs  # noqa: F401  (registers physai/Hopper-v5 and the other tasks with Gymnasium)


class RunningStats:
    """Running mean and standard deviation of states (n,) over every state seen (Welford's update, batched)."""

    def __init__(self, n: int):
        self.count, self.mean, self.m2 = 0, np.zeros(n), np.zeros(n)

    def add(self, X: np.ndarray) -> None:
        """X (k, n): k more states."""
        if len(X) == 0:
            return
        k, mean = len(X), X.mean(axis=0)
        delta, total = mean - self.mean, self.count + len(X)
        self.m2 += ((X - mean) ** 2).sum(axis=0) + delta**2 * self.count * k / total
        self.mean += delta * k / total
        self.count = total

    def std(self) -> np.ndarray:
        """(n,) the standard deviation, 1 where it is still (nearly) zero, as ARS's V2 keeps it invertible."""
        std = np.sqrt(self.m2 / max(self.count, 1))
        return np.where(std < 1e-8, 1.0, std)


def episodes(env, policies: np.ndarray, stats: RunningStats, seed: int, shift: float, update_stats: bool) -> np.ndarray:
    """The return of one episode for each policy (env.num_envs, nu, nobs), run side by side in the vector environment;
    `shift` is subtracted from every step's reward (the survival bonus); the states seen are added to stats if asked."""
    n = env.num_envs
    obs, _ = env.reset(seed=seed)
    mean, std = stats.mean.copy(), stats.std()           # the policy's normalisation is fixed during the episodes
    returns, alive = np.zeros(n), np.ones(n, dtype=bool)
    while alive.any():
        if update_stats:
            stats.add(obs[alive])
        actions = np.einsum("nij,nj->ni", policies, (obs - mean) / std)
        obs, reward, terminated, truncated, _ = env.step(actions)
        returns += np.where(alive, reward - shift, 0.0)
        alive &= ~(terminated | truncated)           # after its first episode an environment's steps are not counted
    return returns


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="physai/Hopper-v5", help="a Gymnasium id (physai/Hopper-v5, or Gymnasium's "
                                                                  "own Hopper-v5 to compare)")
    parser.add_argument("--iterations", type=int, default=100, help="ARS iterations")
    parser.add_argument("--directions", type=int, default=8, help="N: directions a step (2N environments)")
    parser.add_argument("--top", type=int, default=4, help="b: the best directions used")
    parser.add_argument("--step-size", type=float, default=0.02, help="alpha")
    parser.add_argument("--noise", type=float, default=0.03, help="nu: the exploration noise")
    parser.add_argument("--every", type=int, default=10, help="evaluate the policy every this many iterations")
    parser.add_argument("--episodes", type=int, default=8, help="episodes of an evaluation")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not 0 < args.top <= args.directions:
        parser.error(f"--top must be between 1 and --directions ({args.directions}), got {args.top}")

    rng = np.random.default_rng(args.seed)
    train = gymnasium.make_vec(args.env, num_envs=2 * args.directions)
    test = gymnasium.make_vec(args.env, num_envs=args.episodes)
    nobs, nu = train.single_observation_space.shape[0], train.single_action_space.shape[0]
    W, stats = np.zeros((nu, nobs)), RunningStats(nobs)

    def evaluate() -> float:
        return float(episodes(test, np.repeat(W[None], args.episodes, axis=0), stats, args.seed, 0.0, False).mean())

    curve, start = [(0, evaluate())], time.perf_counter()
    print(f"ARS (V2-t) on {args.env}: {args.directions} directions, top {args.top}, step {args.step_size:g}, "
          f"noise {args.noise:g}, seed {args.seed}")
    print(f"  iteration {0:4d}: mean return {curve[0][1]:9.1f} over {args.episodes} episodes")
    for it in range(1, args.iterations + 1):
        delta = rng.standard_normal((args.directions, nu, nobs))
        policies = W + args.noise * np.concatenate([delta, -delta])
        R = episodes(train, policies, stats, int(rng.integers(2**31)), 1.0, True)
        plus, minus = R[:args.directions], R[args.directions:]
        best = np.argsort(-np.maximum(plus, minus), kind="stable")[:args.top]
        sigma = np.concatenate([plus[best], minus[best]]).std()
        W += args.step_size / (args.top * (sigma if sigma > 0 else 1.0)) * np.einsum("k,kij->ij", plus[best]
                                                                                     - minus[best], delta[best])
        if it % args.every == 0 or it == args.iterations:
            curve.append((it, evaluate()))
            print(f"  iteration {it:4d}: mean return {curve[-1][1]:9.1f}   ({time.perf_counter() - start:6.1f} s)")
    seconds = time.perf_counter() - start
    print(f"mean return {curve[0][1]:.1f} -> {curve[-1][1]:.1f} in {args.iterations} iterations, {seconds:.1f} s")
    train.close()
    test.close()
    return [it for it, _ in curve], [r for _, r in curve], seconds


if __name__ == "__main__":
    main()
