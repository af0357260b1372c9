// A short time slice for a thread that must run as soon as it is woken: the
// CPU driver's realtime lane.
//
// Why. Linux's scheduler (EEVDF, since 6.6) lets the thread on a core finish
// its time slice before a thread it woke runs, checking at the timer tick,
// unless the woken thread asks for a shorter slice than the running one's.
// So a thread woken while a busy one (a CPU stream in the middle of a big
// convolution) holds the core waited up to one tick, 4 ms here, whatever
// its niceness. With a short slice its wake-up preempts at once. A short
// slice also loses the core sooner, so it pays only with a weight (a lower
// niceness) above the threads it preempts.
#pragma once

#include <chrono>

namespace hetero::core {

// Asks for a time slice of `slice` for the calling thread, keeping its
// niceness and policy (SCHED_OTHER); threads it starts afterwards do not
// inherit it. Kernels before 6.12 take no slice from
// sched_setattr and ignore it; false when the kernel refuses.
bool request_time_slice(std::chrono::microseconds slice);

}  // namespace hetero::core
