"""Augmented random search (Mania, Guy and Recht 2018, "Simple random search provides a competitive approach to
reinforcement learning", ARS V2-t) of a linear policy for Hopper-v5, NumPy only, on physai.envs.

    uv run python examples/ars_hopper.py                      # 40 iterations, 16 directions, seed 0
    uv run python examples/ars_hopper.py --iterations 100 --directions 8 --top 4 --seed 1

The policy is a = clip(M (s - mu) / sigma, -1, 1), M (3, 11), with mu, sigma the running mean and standard deviation of
the states seen (V2). Each iteration draws `directions` Gaussian directions delta_k and runs the 2 x directions policies
M +- nu delta_k as one batch of physai environments (one episode each, up to --horizon steps), then moves M along the
`top` best directions:

    M <- M + alpha / (top sigma_R) sum_k (R(M + nu delta_k) - R(M - nu delta_k)) delta_k

(sigma_R the standard deviation of the 2 top returns used). It prints each iteration's mean return of the 2 x
directions episodes, the best direction's, the steps taken and the seconds: the return rises as the hopper learns to
stand and hop forward. Everything random comes from --seed (the directions, and the environments' reset seeds).
"""

import argparse
import time

import numpy as np

import physai.envs


def episodes(env, policies: np.ndarray, mu: np.ndarray, sigma: np.ndarray, seed: int, stats: list):
    """Returns (E,) of one episode of each environment under its policy (E, nu, obs); the states seen are appended to
    stats for the running normalisation; and the number of environment steps taken."""
    obs, _ = env.reset(seed=seed)
    E = len(policies)
    returns, alive, steps = np.zeros(E), np.ones(E, bool), 0
    low, high = env.single_action_space.low, env.single_action_space.high
    while alive.any():
        stats.append(obs[alive])
        actions = np.einsum("eij,ej->ei", policies, (obs - mu) / sigma)
        obs, reward, terminated, truncated, _ = env.step(np.clip(actions, low, high))
        returns += reward * alive
        steps += int(alive.sum())
        alive &= ~(terminated | truncated)
    return returns, steps


def main(argv=None) -> list:
    """Run ARS; the mean return of each iteration's episodes, in order."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--directions", type=int, default=16)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--step-size", type=float, default=0.02)
    parser.add_argument("--noise", type=float, default=0.025)
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    env = physai.envs.make_vec("Hopper-v5", num_envs=2 * args.directions, max_episode_steps=args.horizon)
    nu, n_obs = env.single_action_space.shape[0], env.single_observation_space.shape[0]
    M = np.zeros((nu, n_obs))
    mu, sigma = np.zeros(n_obs), np.ones(n_obs)
    count, total, squares = 0, np.zeros(n_obs), np.zeros(n_obs)            # the running state statistics
    print(f"ARS V2-t on Hopper-v5 (physai.envs): {args.directions} directions, top {args.top}, "
          f"step {args.step_size}, noise {args.noise}, horizon {args.horizon}, seed {args.seed}")
    print(f"{'iteration':>9}{'mean return':>13}{'best':>9}{'env steps':>11}{'seconds':>9}")
    t0, curve = time.perf_counter(), []
    for it in range(args.iterations):
        delta = rng.standard_normal((args.directions, nu, n_obs))
        policies = np.repeat(M[None], 2 * args.directions, axis=0)
        policies[0::2] += args.noise * delta
        policies[1::2] -= args.noise * delta
        stats = []
        R, steps = episodes(env, policies, mu, sigma, args.seed * 100_000 + it * 1000, stats)
        r_plus, r_minus = R[0::2], R[1::2]
        top = np.argsort(-np.maximum(r_plus, r_minus))[:args.top]
        sigma_R = np.std(np.concatenate((r_plus[top], r_minus[top]))) or 1.0
        M += args.step_size / (args.top * sigma_R) * np.einsum("k,kij->ij", r_plus[top] - r_minus[top], delta[top])
        states = np.concatenate(stats)
        count, total, squares = count + len(states), total + states.sum(axis=0), squares + (states ** 2).sum(axis=0)
        mu = total / count
        sigma = np.sqrt(np.maximum(squares / count - mu ** 2, 1e-4))
        print(f"{it:>9}{R.mean():>13.1f}{R.max():>9.1f}{steps:>11}{time.perf_counter() - t0:>9.1f}", flush=True)
        curve.append(R.mean())
    return curve


if __name__ == "__main__":
    main()
