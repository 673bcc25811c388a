// The engine's one way of running on threads: on_threads runs T pieces of work on up to T threads of a pool kept for
// the process (WorkerPool) and rethrows the first exception one raised once all have finished; parallel_for splits
// [0, N) into T chunks that start at multiples of the widest lanes (BLOCK), for the batch kernels, the derivatives and
// rollout; parallel_pieces hands out pieces to whichever thread is free, for the constraint kernels, whose states take
// unequal times (cpp/bindings.cpp releases the GIL around them).
//
// Threads the system refuses to start (std::system_error) are no error: the threads that did start run the remaining
// work, or the calling thread when none did. While the threads run, the calling thread asks poll() every POLL_MS
// (cpp/bindings.cpp: whether a signal such as Ctrl-C is pending) and sets the run's stop flag when it says so; the
// workers read the flag between pieces of a few milliseconds of work (in_pieces, and the rollout's steps), and the
// caller discards the run.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif
#include <exception>
#include <functional>
#include <mutex>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "lanes.h"

namespace physai {
namespace {

// the hardware's threads (at least 1)
inline int hardware_threads() {
    static const int hardware = [] {                                    // reads /sys: once per process
        unsigned h = std::thread::hardware_concurrency();
        return h ? int(h) : 1;
    }();
    return hardware;
}

// the most threads PHYSAI_NUM_THREADS may ask for: 4 per hardware thread, at most 256
inline int max_threads() { return std::min(256, 4 * hardware_threads()); }

// PHYSAI_NUM_THREADS's rule (src/physai/engine/native.py's thread_request is the same): decimal digits only, a whole
// number >= 1, capped at max_threads(); anything else ("1e9", " 4", "+4", "0", "-2") is ignored: 0
inline int parse_threads(const char *s) {
    if (!s || !*s) return 0;
    int64_t n = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        n = std::min<int64_t>(10 * n + (*s - '0'), INT32_MAX);          // saturates: no overflow
    }
    return n >= 1 ? int(std::min<int64_t>(n, max_threads())) : 0;
}

// threads a large batch runs on: PHYSAI_NUM_THREADS when valid, else the hardware's
inline int num_threads() {
    int n = parse_threads(std::getenv("PHYSAI_NUM_THREADS"));
    return n ? n : hardware_threads();
}

// test hook (_native._set_thread_limit): threads started past this many fail as a refused std::thread does; -1: none
inline std::atomic<int> &thread_limit() {
    static std::atomic<int> limit{-1};
    return limit;
}

// how often the calling thread polls while the threads run
constexpr std::chrono::milliseconds POLL_MS{10};

// how long a worker that finished a run watches for the next, and the calling thread for its workers' end, before
// sleeping on its condition: a run that follows within it starts without a wake-up's latency (tens of microseconds on
// a virtual machine, a piece's share of a batch of short states)
constexpr std::chrono::microseconds SPIN_US{200};

// until ready() or SPIN_US has passed: whether ready(). Each turn yields the CPU (another process's thread, or a
// worker of this run where the CPUs are fewer than the threads, runs instead: a pause would hold it for SPIN_US)
template <class Ready> bool spin_until(Ready &&ready) {
    const auto until = std::chrono::steady_clock::now() + SPIN_US;
    for (;;) {
        if (ready()) return true;
        if (std::chrono::steady_clock::now() >= until) return ready();
        std::this_thread::yield();
    }
}

// the CPUs this process may run on (its affinity where the system says it; else the hardware's threads)
inline int usable_cpus() {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
    return hardware_threads();
}

// the default poll: never stop
struct NeverStop {
    bool operator()() const { return false; }
};

// The process's worker threads, kept between runs (starting a thread costs tens of microseconds, as much as a batch of a
// thousand small states): a run takes the pool whole and hands its work to `count` of them, which it starts as it
// first needs them (those the system refuses are not there: fewer run). One run at a time: a run that finds the pool
// taken (another Python thread's, or a run inside a run) starts threads of its own for the time it runs. After fork()
// the child has none of the parent's threads: it starts a new pool (the old one, whose locks a parent's thread may
// hold, is left as it is). Where a run's threads fit usable_cpus(), its workers spin_until the next run and the caller
// until their end before they sleep on their conditions.
class WorkerPool {
  public:
    static WorkerPool &get() {
        static const bool made = [] {                                  // once, thread-safe (a function's static)
            current().store(new WorkerPool());                         // never freed: idle workers wait on it at exit
#if defined(__unix__) || defined(__APPLE__)
            pthread_atfork(nullptr, nullptr, [] { current().store(new WorkerPool()); });
#endif
            return true;
        }();
        (void)made;
        return *current().load();
    }
    std::mutex busy;                                                   // held by the run that has the pool

    // up to `count` workers started (the test hook's limit and the system's refusals counted): how many there are
    int reserve(int count) {
        int limit = thread_limit().load();
        if (limit >= 0) count = std::min(count, limit);
        std::lock_guard<std::mutex> g(lock_);
        while (int(wake_.size()) < count) {
            wake_.emplace_back();                                      // a deque: the others' stay where they are
            try {
                int index = int(wake_.size()) - 1;
                std::thread([this, index] { serve(index); }).detach();
            } catch (const std::exception &) {                       // std::system_error (std::bad_alloc for its state)
                wake_.pop_back();
                break;
            }
        }
        return std::min(count, int(wake_.size()));
    }
    // job() on workers [0, count) (count <= reserve's answer), under busy; finished once every one has returned. Only
    // those workers are woken (one condition each): a pool grown large once costs nothing to a small run later.
    void start(int count, std::function<void()> *job) {
        std::lock_guard<std::mutex> g(lock_);
        job_ = job, active_ = count, running_.store(count), spin_.store(count < usable_cpus()), generation_.fetch_add(1);
        for (int k = 0; k < count; k++) wake_[size_t(k)].notify_one();
    }
    // whether the run's workers have all returned, waiting up to `wait` (spinning first: spin_until)
    bool wait_for(std::chrono::milliseconds wait) {
        if (spin_.load() && spin_until([&] { return running_.load() == 0; })) return true;
        std::unique_lock<std::mutex> g(lock_);
        return done_.wait_for(g, wait, [&] { return running_.load() == 0; });
    }

  private:
    static std::atomic<WorkerPool *> &current() {
        static std::atomic<WorkerPool *> pool{nullptr};
        return pool;
    }
    void serve(int index) {
        uint64_t seen = 0;
        for (;;) {
            if (spin_.load()) spin_until([&] { return generation_.load() != seen; });   // the next run, if it comes soon
            std::unique_lock<std::mutex> g(lock_);
            wake_[size_t(index)].wait(g, [&] { return generation_.load() != seen && index < active_; });
            seen = generation_.load();
            std::function<void()> *job = job_;
            g.unlock();
            (*job)();
            g.lock();
            if (running_.fetch_sub(1) == 1) done_.notify_all();
        }
    }
    std::mutex lock_;
    std::deque<std::condition_variable> wake_;                         // one per worker started
    std::condition_variable done_;
    std::function<void()> *job_ = nullptr;
    std::atomic<uint64_t> generation_{0};                              // written under lock_; read by the spins
    std::atomic<int> running_{0};
    std::atomic<bool> spin_{false};                                    // the last run's threads (its workers and the
    int active_ = 0;                                                   // caller) no more than usable_cpus(): spin
};

// whether this thread is running a batch on threads (on_threads below): a nested run (a Python signal handler's call
// from the poll) must not take the locks that run holds
inline bool &in_run() {
    static thread_local bool running = false;
    return running;
}

// the calling thread's check between its own pieces while it takes a share of a run (on_threads<true>: it asks poll()
// every POLL_MS there); null on every other thread
inline std::function<void()> *&caller_check() {
    static thread_local std::function<void()> *check = nullptr;
    return check;
}

// fn(t) for t in [0, T) on up to T threads, each thread taking the next t when it finishes one; the first exception
// of an fn is rethrown after every thread has finished. No poll (NeverStop) and T <= 1: on the calling thread. Otherwise
// on T of the pool's workers (threads of the run's own when the pool is taken; as many as the system allows; none: the
// calling thread runs every t itself), the calling thread calling poll() every POLL_MS while they run until it returns
// true, then setting stop (the t's not begun are skipped). CallerTakes (short pieces, parallel_pieces'): with the pool,
// T - 1 workers and the calling thread one of the T, asking poll() between its pieces (caller_check) every POLL_MS: one
// worker fewer to wake, none to wait for where the calling thread finishes last
template <bool CallerTakes = false, class Fn, class Poll = NeverStop>
void on_threads(int T, Fn &&fn, std::atomic<bool> &stop, Poll &&poll = Poll{}) {
    constexpr bool polls = !std::is_same_v<std::decay_t<Poll>, NeverStop>;
    T = std::max(T, 1);
    std::vector<std::exception_ptr> errors(static_cast<size_t>(T));
    std::atomic<int> next{0};
    auto take = [&] {                                                  // the t's left, one at a time
        for (int t = next.fetch_add(1); t < T && !stop.load(std::memory_order_relaxed); t = next.fetch_add(1)) {
            try {
                fn(t);
#if defined(__GLIBCXX__)
            } catch (abi::__forced_unwind &) {                         // the calling thread ended in its poll (below)
                throw;
#endif
            } catch (...) {
                errors[size_t(t)] = std::current_exception();
            }
        }
    };
    // while the workers run: poll every POLL_MS until finished() (a poll that throws stops too). A thread ended by the
    // system while it polls (glibc's forced unwind, e.g. Python 3.11-3.13 ending a thread that asks for the GIL at
    // exit) stops the run and waits for its workers, which use this frame, before the unwind goes on.
    auto ask = [&](auto &&finished) {                                  // one poll
        bool yes = true;
        try {
            yes = poll();
#if defined(__GLIBCXX__)
        } catch (abi::__forced_unwind &) {
            stop.store(true);
            while (!finished()) {}
            throw;
#endif
        } catch (...) {}
        if (yes) stop.store(true);
    };
    auto supervise = [&](auto &&finished) {
        while (!finished())
            if (polls && !stop.load()) ask(finished);
    };
    struct Running {                                                   // in_run() while this thread supervises a run
        bool was = in_run();
        Running() { in_run() = true; }
        ~Running() { in_run() = was; }
    };
    if (T <= 1 && !polls) {
        take();
    } else if (WorkerPool &pool = WorkerPool::get(); !in_run() && pool.busy.try_lock()) {
        std::lock_guard<std::mutex> hold(pool.busy, std::adopt_lock);
        Running running;
        int workers = pool.reserve(CallerTakes ? T - 1 : T);
        if (CallerTakes) {                                             // the calling thread one of the T
            std::function<void()> job = take;
            if (workers) pool.start(workers, &job);
            auto last = std::chrono::steady_clock::now();
            std::function<void()> check = [&] {                        // poll every POLL_MS between its pieces
                if (!polls || stop.load() || std::chrono::steady_clock::now() - last < POLL_MS) return;
                last = std::chrono::steady_clock::now();
                ask([&] { return !workers || pool.wait_for(POLL_MS); });
            };
            struct Checking {                                          // caller_check() while it takes
                std::function<void()> *was = caller_check();
                explicit Checking(std::function<void()> *c) { caller_check() = c; }
                ~Checking() { caller_check() = was; }
            } checking(&check);
            take();
            if (workers) supervise([&] { return pool.wait_for(POLL_MS); });
        } else if (workers == 0) {                                     // not one: the calling thread runs them all
            take();
        } else {
            std::function<void()> job = take;
            pool.start(workers, &job);
            supervise([&] { return pool.wait_for(POLL_MS); });
        }
    } else {                                                           // the pool is taken: threads of this run's own
        Running running;
        std::mutex lock;
        std::condition_variable finished;
        size_t done = 0;                                               // threads finished, under lock
        std::vector<std::thread> own;
        own.reserve(size_t(T));
        for (int k = 0; k < T; k++) {                                  // as many as the system allows
            try {
                int limit = thread_limit().load();
                if (limit >= 0 && k >= limit) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
                own.emplace_back([&] {
                    take();
                    std::lock_guard<std::mutex> g(lock);
                    done++;
                    finished.notify_one();
                });
            } catch (const std::exception &) {
                break;
            }
        }
        struct Join {                                                  // also when the supervision unwinds
            std::vector<std::thread> &threads;
            ~Join() {
                for (auto &th : threads) th.join();
            }
        } join{own};
        if (own.empty()) {
            take();
        } else {
            supervise([&] {
                std::unique_lock<std::mutex> g(lock);
                return finished.wait_for(g, POLL_MS, [&] { return done == own.size(); });
            });
        }
    }
    for (auto &e : errors)
        if (e) std::rethrow_exception(e);
}

// fn(lo, hi) over T chunks of [0, N) (see on_threads), chunk t starting at (N t / T) rounded down to a multiple of BLOCK
template <class Fn, class Poll = NeverStop> void parallel_for(int64_t N, int T, std::atomic<bool> &stop, Fn &&fn, Poll &&poll = Poll{}) {
    T = std::max(T, 1);
    on_threads(T, [&fn, N, T](int t) {
        int64_t lo = (N * t / T) / BLOCK * BLOCK, hi = t + 1 == T ? N : (N * (t + 1) / T) / BLOCK * BLOCK;
        fn(lo, hi);
    }, stop, poll);
}

// parallel_for with the calling thread asking poll() (see on_threads), unless the work is short (cost, in units of one
// pass over a model's links, under 200000: a few milliseconds) and runs on the calling thread alone
template <class Fn, class Poll> void threads_for(int64_t N, int T, int64_t cost, std::atomic<bool> &stop, Fn &&fn, Poll &&poll) {
    if (T <= 1 && cost < 200000) parallel_for(N, T, stop, fn);
    else parallel_for(N, T, stop, fn, poll);
}

// fn(t, k) for every piece k in [0, pieces) on T threads t (see on_threads; CallerTakes: pieces short enough to poll
// between, the calling thread one of the T where the pool runs them), each thread taking the next piece when it
// finishes one (the work balances when threads run at different speeds); none once stop is set
template <bool CallerTakes = false, class Fn, class Poll = NeverStop>
void parallel_pieces(int64_t pieces, int T, std::atomic<bool> &stop, Fn &&fn, Poll &&poll = Poll{}) {
    std::atomic<int64_t> next{0};
    on_threads<CallerTakes>(T, [&fn, &next, &stop, pieces](int t) {
        std::function<void()> *check = caller_check();
        for (int64_t k = next.fetch_add(1); k < pieces && !stop.load(std::memory_order_relaxed); k = next.fetch_add(1)) {
            fn(t, k);
            if (check) (*check)();
        }
    }, stop, poll);
}

// fn(a, b) over [lo, hi) in pieces of `piece` (a multiple of BLOCK keeps the lanes' blocks where they were), until stop
template <class Fn> void in_pieces(int64_t lo, int64_t hi, int64_t piece, const std::atomic<bool> &stop, Fn &&fn) {
    for (int64_t a = lo; a < hi && !stop.load(std::memory_order_relaxed); a += piece) fn(a, std::min(hi, a + piece));
}

}  // namespace
}  // namespace physai
