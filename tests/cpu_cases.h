/* A problem on guarded host buffers, run by the scalar reference and by a cpu fast
 * path (every SIMD flavour, several thread counts) and compared bit for bit: every
 * buffer (outputs, in-place states, and the inputs, which must stay as they were);
 * poisoned guard bytes before each and an unreadable page right after it (a read or
 * write past a buffer faults). For check_cpu_backward and check_cpu_causal; the
 * flavours, thread counts and seed for check_cpu_fast too. */
#ifndef CPU_CASES_H
#define CPU_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "dwconv_module.h"
#include "kernels.h"
#include "test_util.h"

enum { CPU_CASE_BUFFERS = 16 };

typedef struct cpu_case_buffer {
    char *block;     /* mapped: guard bytes, data, an unreadable page */
    size_t map_bytes;
    void *data;
    size_t bytes;
    char *initial;   /* the contents every run starts from */
    char *expected;  /* the reference's result */
} cpu_case_buffer;

typedef struct cpu_case {
    dwconv_problem p; /* the caller validates it on the buffers */
    int count;
    cpu_case_buffer buf[CPU_CASE_BUFFERS];
} cpu_case;

/* Buffers: random values of dtype (an input, or a state updated in place), poisoned
 * bytes (an output), or a copy of given int32 values. NULL for n == 0. */
void *cpu_case_random(cpu_case *c, test_rng *rng, dwconv_dtype dtype, int64_t n);
void *cpu_case_poisoned(cpu_case *c, size_t bytes);
int32_t *cpu_case_indices(cpu_case *c, const int32_t *values, int64_t n);

/* The fast path under test, as dwconv_cpu_backward_with and dwconv_cpu_causal_with. */
typedef dwconv_status (*cpu_case_runner)(const dwconv_cpu_kernels *kernels,
                                         const dwconv_problem *p, int threads, char *msg);

/* The reference, then `run` for every available flavour and thread count (1, 2, 3,
 * 7 and OpenMP's default), each from the same initial contents: every buffer and
 * guard must match. `what` names the case in failure messages. */
void cpu_case_expect_all(cpu_case *c, cpu_case_runner run, const char *what);

void cpu_case_free(cpu_case *c);

/* The flavours this build and processor run (generic always), at most
 * CPU_CASE_FLAVOURS of them: their count. */
enum { CPU_CASE_FLAVOURS = 3 };
int cpu_case_flavours(const dwconv_cpu_kernels **list);

/* Calls run for every available flavour with 1, 2, 3, 7 and OpenMP's default (0)
 * threads: the runs every cpu fast path must match the reference in. */
typedef void (*cpu_case_each_fn)(const dwconv_cpu_kernels *kernels, int threads, void *arg);
void cpu_case_each(cpu_case_each_fn run, void *arg);

/* DWCONV_TEST_SEED from the environment, else the suite's own base seed (failures
 * name their case, so a seed reproduces them). */
uint64_t cpu_case_seed(uint64_t fallback);

#endif
