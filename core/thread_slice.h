// A short time slice for threads that must run as soon as they are woken:
// the daemon's threads, the CPU driver's streams and its realtime lane.
//
// Why. Linux's scheduler (EEVDF, since 6.6) lets the thread on a core finish
// its time slice before a thread it woke runs, checking at the timer tick,
// unless the woken thread asks for a shorter slice than the running one's.
// So a thread woken while a busy one holds the core waited up to one tick,
// 4 ms here, whatever its niceness. With a short slice its wake-up preempts
// at once.
//
// A short slice also loses the core sooner: the scheduler stays fair, and
// over a second the thread gets the same share at the same niceness. What
// changes is when: in many short turns instead of a few long ones. That is
// what a thread serving a waiting client wants. Through heterod, beside two
// busy processes on two vCPUs, a request wakes three threads (the client's,
// the daemon's loop, a CPU stream), and each wake-up waited for a busy
// process's slice: the openWakeWord embedding's p99 was 7.0-8.4 ms through
// the daemon against 5.2-5.3 in process, and with short slices for the
// daemon's threads 5.7-6.7, in alternating runs. PP-OCR det on streams
// beside the same load kept its throughput (9.0 and 8.9 inferences/s with
// the default slice, 9.6 and 10.1 with the short one). To pass the busy
// threads of its own process, the realtime lane needs a lower niceness as
// well (drivers/cpu/scheduler.cpp).
#pragma once

#include <chrono>

namespace hetero::core {

// The slice asked for: the shortest Linux takes.
constexpr std::chrono::microseconds kShortSlice{100};

// Whether threads the calling thread starts afterwards take its slice too.
// When not, they start with the default slice, and at niceness 0 where the
// caller's was below 0 (the kernel's SCHED_FLAG_RESET_ON_FORK).
enum class SliceInherited { kNo, kYes };

// Asks for a time slice of `slice` for the calling thread, keeping its
// niceness and policy (SCHED_OTHER). Kernels before 6.12 take no slice from
// sched_setattr and ignore it; false when the kernel refuses.
bool request_time_slice(std::chrono::microseconds slice, SliceInherited inherited);

// The calling thread's time slice; zero on kernels before 6.12, which do
// not say.
std::chrono::nanoseconds time_slice();

}  // namespace hetero::core
