/* See cpu_cases.h. */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_cases.h"
#include "reference.h"

enum { GUARD = 64 };

static const char *const flavour_names[CPU_CASE_FLAVOURS] = {"generic", "avx2", "avx512"};
static const int thread_counts[] = {1, 2, 3, 7, 0};

int cpu_case_flavours(const dwconv_cpu_kernels **list) {
    int n = 0;
    for (int i = 0; i < CPU_CASE_FLAVOURS; i++) {
        char why[256];
        if (dwconv_cpu_kernels_find(flavour_names[i], &list[n], why, sizeof why) == DWCONV_SUCCESS)
            n++;
    }
    return n;
}

void cpu_case_each(cpu_case_each_fn run, void *arg) {
    const dwconv_cpu_kernels *list[CPU_CASE_FLAVOURS];
    const int flavours = cpu_case_flavours(list);
    for (int f = 0; f < flavours; f++)
        for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++)
            run(list[f], thread_counts[t], arg);
}

uint64_t cpu_case_seed(uint64_t fallback) {
    const char *env = getenv("DWCONV_TEST_SEED");
    return env && *env ? strtoull(env, NULL, 0) : fallback;
}

/* The data ends where an unreadable page begins (a read or write past it faults);
 * poisoned guard bytes before it. */
static cpu_case_buffer *add(cpu_case *c, size_t bytes) {
    ck_assert_int_lt(c->count, CPU_CASE_BUFFERS);
    cpu_case_buffer *b = &c->buf[c->count++];
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    b->bytes = bytes;
    b->map_bytes = (bytes + GUARD + page - 1) / page * page + page;
    b->block = mmap(NULL, b->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(b->block != MAP_FAILED);
    ck_assert_int_eq(mprotect(b->block + b->map_bytes - page, page, PROT_NONE), 0);
    b->initial = malloc(bytes + 1);
    b->expected = malloc(bytes + 1);
    ck_assert(b->initial && b->expected);
    b->data = b->block + b->map_bytes - page - bytes;
    test_poison((char *)b->data - GUARD, bytes + GUARD);
    return b;
}

void *cpu_case_random(cpu_case *c, test_rng *rng, dwconv_dtype dtype, int64_t n) {
    if (n == 0) return NULL;
    cpu_case_buffer *b = add(c, test_bytes(dtype, n));
    test_fill_random(rng, dtype, b->data, n);
    return b->data;
}

void *cpu_case_poisoned(cpu_case *c, size_t bytes) {
    return bytes ? add(c, bytes)->data : NULL;
}

int32_t *cpu_case_indices(cpu_case *c, const int32_t *values, int64_t n) {
    if (n == 0) return NULL;
    cpu_case_buffer *b = add(c, sizeof(int32_t) * (size_t)n);
    memcpy(b->data, values, b->bytes);
    return b->data;
}

static void restore(cpu_case *c) {
    for (int i = 0; i < c->count; i++) memcpy(c->buf[i].data, c->buf[i].initial, c->buf[i].bytes);
}

/* Each buffer against the reference's, and its guards. */
static void compare(const cpu_case *c, const char *what, const char *flavour, int threads) {
    for (int i = 0; i < c->count; i++) {
        const cpu_case_buffer *b = &c->buf[i];
        if (!test_untouched((const char *)b->data - GUARD, GUARD))
            ck_abort_msg("%s, %s, %d threads: wrote outside buffer %d", what, flavour, threads, i);
        if (memcmp(b->data, b->expected, b->bytes) == 0) continue;
        size_t at = 0;
        while (((const char *)b->data)[at] == b->expected[at]) at++;
        ck_abort_msg("%s, %s, %d threads: buffer %d (of %zu bytes) differs from the reference "
                     "at byte %zu", what, flavour, threads, i, b->bytes, at);
    }
}

/* What cpu_case_expect_all hands each run. */
typedef struct expect_job {
    cpu_case *c;
    cpu_case_runner run;
    const char *what;
} expect_job;

/* One flavour and thread count from the initial contents, against the reference. */
static void expect_one(const dwconv_cpu_kernels *k, int threads, void *arg) {
    const expect_job *j = arg;
    char msg[DWCONV_MSG_SIZE] = "";
    restore(j->c);
    dwconv_status st = j->run(k, &j->c->p, threads, msg);
    ck_assert_msg(st == DWCONV_SUCCESS, "%s, %s, %d threads: status %d (%s)", j->what, k->name,
                  threads, (int)st, msg);
    compare(j->c, j->what, k->name, threads);
}

void cpu_case_expect_all(cpu_case *c, cpu_case_runner run, const char *what) {
    char msg[DWCONV_MSG_SIZE] = "";
    for (int i = 0; i < c->count; i++) memcpy(c->buf[i].initial, c->buf[i].data, c->buf[i].bytes);
    dwconv_status want = dwconv_reference_run(&c->p, msg);
    ck_assert_msg(want == DWCONV_SUCCESS, "%s: the reference failed: %s", what, msg);
    for (int i = 0; i < c->count; i++) memcpy(c->buf[i].expected, c->buf[i].data, c->buf[i].bytes);
    expect_job job = {c, run, what};
    cpu_case_each(expect_one, &job);
}

void cpu_case_free(cpu_case *c) {
    for (int i = 0; i < c->count; i++) {
        munmap(c->buf[i].block, c->buf[i].map_bytes);
        free(c->buf[i].initial), free(c->buf[i].expected);
    }
    c->count = 0;
}
