// heterod's allocator settings, built into the daemon executable where it
// links jemalloc (libhetero leaves the allocator to the program that loads
// it).
//
// A long-running daemon meets spikes: a client's upload that compiles
// through hundreds of MiB, a burst of 16 MiB tensors. With glibc's malloc,
// memory freed after such a spike stays with the process: each thread's
// arena keeps up to 64 MiB free at its top (glibc raises its trim threshold
// as large blocks are freed), and malloc_trim() does not shrink a thread
// arena's top. So heterod links jemalloc where it is built with it
// (meson option `jemalloc`, docs/limits.md), and jemalloc reads its
// settings from this symbol:
//
// - background_thread: one thread of jemalloc's returns freed pages on a
//   timer, also from the arenas of threads that have gone quiet (a client's
//   loader thread after its last load); one is enough (the default is one
//   per core);
// - dirty_decay_ms:5000: pages freed are given back gradually over 5 s, so
//   memory that is freed and soon needed again (the next request's tensors
//   and messages) is mostly reused without page faults; at 1 s, the v2
//   listener's 4 to 16 MiB messages were up to 1.4 times slower than with
//   glibc, at 5 s within the noise (docs/limits.md);
// - muzzy_decay_ms:0: given back with MADV_DONTNEED, which lowers RSS at
//   once, rather than MADV_FREE, which lowers it only under memory pressure;
// - oversize_threshold:0: blocks over 8 MiB come from the same arenas as
//   the rest, not from jemalloc's own arena for them, which gives them back
//   at once and so faults a 16 MiB message's pages in again every time;
// - retain:false: address space whose pages were given back is unmapped,
//   not kept for later. Kept, it added up under an address-space limit: four
//   clients' 16 MiB frames left enough of it that a later upload's compile,
//   within every limit, failed to allocate (tests/daemon/test_hostile.cpp).
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf =
    "background_thread:true,max_background_threads:1,dirty_decay_ms:5000,muzzy_decay_ms:0,oversize_threshold:0,"
    "retain:false";
}
