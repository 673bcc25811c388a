// The engine's one way of running on threads: parallel_for splits [0, N) into T chunks that start at multiples of the
// widest lanes (BLOCK), runs them on std::threads and rethrows the first exception a thread raised once all have
// joined. Used by the batch kernels, the derivatives and rollout (cpp/bindings.cpp releases the GIL around it).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <thread>
#include <vector>

#include "lanes.h"

namespace physai {
namespace {

// threads a large batch runs on: PHYSAI_NUM_THREADS, else the hardware's
inline int num_threads() {
    if (const char *s = std::getenv("PHYSAI_NUM_THREADS")) {
        int n = std::atoi(s);
        if (n >= 1) return n;
    }
    static const int hardware = [] {                                    // reads /sys: once per process
        unsigned h = std::thread::hardware_concurrency();
        return h ? int(h) : 1;
    }();
    return hardware;
}

// fn(lo, hi) over T chunks of [0, N) (on the calling thread when T <= 1), chunk t starting at (N t / T) rounded down to
// a multiple of BLOCK; the first exception of a chunk is rethrown after every thread has joined
template <class Fn> void parallel_for(int64_t N, int T, Fn &&fn) {
    if (T <= 1) {
        fn(int64_t(0), N);
        return;
    }
    std::vector<std::exception_ptr> errors(static_cast<size_t>(T));
    std::vector<std::thread> pool;
    pool.reserve(size_t(T));
    for (int t = 0; t < T; t++) {
        int64_t lo = (N * t / T) / BLOCK * BLOCK, hi = t + 1 == T ? N : (N * (t + 1) / T) / BLOCK * BLOCK;
        pool.emplace_back([&fn, &errors, t, lo, hi] {
            try {
                fn(lo, hi);
            } catch (...) {
                errors[size_t(t)] = std::current_exception();
            }
        });
    }
    for (auto &th : pool) th.join();
    for (auto &e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace
}  // namespace physai
