// The engine's one way of running on threads: on_threads runs T std::threads and rethrows the first exception one
// raised once all have joined; parallel_for splits [0, N) into T chunks that start at multiples of the widest lanes
// (BLOCK), for the batch kernels, the derivatives and rollout; parallel_pieces hands out pieces to whichever thread is
// free, for the constraint kernels, whose states take unequal times (cpp/bindings.cpp releases the GIL around them).
#pragma once

#include <atomic>
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

// fn(t) for t in [0, T) on T threads (on the calling thread when T <= 1); the first exception of a thread is rethrown
// after every thread has joined
template <class Fn> void on_threads(int T, Fn &&fn) {
    if (T <= 1) {
        fn(0);
        return;
    }
    std::vector<std::exception_ptr> errors(static_cast<size_t>(T));
    std::vector<std::thread> pool;
    pool.reserve(size_t(T));
    for (int t = 0; t < T; t++)
        pool.emplace_back([&fn, &errors, t] {
            try {
                fn(t);
            } catch (...) {
                errors[size_t(t)] = std::current_exception();
            }
        });
    for (auto &th : pool) th.join();
    for (auto &e : errors)
        if (e) std::rethrow_exception(e);
}

// fn(lo, hi) over T chunks of [0, N) (on the calling thread when T <= 1), chunk t starting at (N t / T) rounded down to
// a multiple of BLOCK
template <class Fn> void parallel_for(int64_t N, int T, Fn &&fn) {
    on_threads(T, [&fn, N, T](int t) {
        int64_t lo = (N * t / T) / BLOCK * BLOCK, hi = t + 1 == T ? N : (N * (t + 1) / T) / BLOCK * BLOCK;
        fn(lo, hi);
    });
}

// fn(t, k) for every piece k in [0, pieces) on T threads t, each thread taking the next piece when it finishes one (the
// work balances when threads run at different speeds)
template <class Fn> void parallel_pieces(int64_t pieces, int T, Fn &&fn) {
    std::atomic<int64_t> next{0};
    on_threads(T, [&fn, &next, pieces](int t) {
        for (int64_t k = next.fetch_add(1); k < pieces; k = next.fetch_add(1)) fn(t, k);
    });
}

}  // namespace
}  // namespace physai
