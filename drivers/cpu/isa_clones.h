// HETERO_ISA_CLONES: compile a hot loop of the driver's own three times and
// let the dynamic loader pick the clone the processor runs.
//
// The driver is built for the baseline x86-64 ISA (Debian's packages run on
// any x86-64), where a loop over sixteen floats is four SSE operations; the
// x86-64-v3 clone (AVX2, FMA) makes it two, the x86-64-v4 one (AVX-512)
// one. GCC resolves the clone once, at load, through an ifunc: a call costs
// what a call through the PLT costs. Elsewhere the attribute is empty.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define HETERO_ISA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HETERO_ISA_CLONES
#endif
