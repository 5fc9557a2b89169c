/*
 * Host time per forward call on the first CUDA device (issue 11: the small problem's
 * call should cost the host at most 3 us): dwconv_forward (descriptor validated on every
 * call) and dwconv_plan_forward (validated once), each as the median over 30 batches of
 * 100 calls of the wall time per call, every batch started on an idle device so that the
 * launch queue never fills and the host never waits for the GPU. Also each problem's
 * device time per call, to show the batches could not have filled the queue.
 *   small  1x512x8192 K3 pad 1, f32 NCL (the small problem)
 *   tiny   1x1x64 K3 pad 1, f32 NCL (the least device work)
 * and the floor: the same batches of a bare driver launch (cuLaunchKernel) of an empty
 * kernel, one thread, through libcuda.so.1 (dlopen), on the same primary context.
 * Build in a dwconv build tree:
 *   cc -O2 -Iinclude bench/gpu/host_bench.c src/.libs/libdwconv.so -ldl -o /tmp/host_bench
 *   DWCONV_MODULE_PATH=$PWD/src/.libs/dwconv /tmp/host_bench
 */
#define _POSIX_C_SOURCE 199309L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dwconv.h"
#include "bench_try.h"

#define BATCHES 30
#define CALLS 100

static dwconv_context *ctx;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct problem {
    dwconv_desc d;
    dwconv_plan *plan;
    void *x, *w, *y;
} problem;

/* How: 0 dwconv_forward, 1 dwconv_plan_forward, 2 the bare driver launch. */
enum { FORWARD, PLANNED, BARE };

/* The driver's launch of an empty kernel (the floor), or NULL fields without libcuda. */
static struct bare {
    int (*launch)(void *f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                  void *stream, void **params, void **extra);
    int (*sync)(void);
    void *function;
} bare;

static void bare_open(void) {
    static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry dwconv_empty() { ret; }\n";
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return;
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
    int (*device)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    int (*current)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
    int (*load)(void **, const void *) = (int (*)(void **, const void *))dlsym(lib, "cuModuleLoadData");
    int (*get)(void **, void *, const char *) =
        (int (*)(void **, void *, const char *))dlsym(lib, "cuModuleGetFunction");
    bare.launch = (int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void *, void **, void **))dlsym(lib, "cuLaunchKernel");
    bare.sync = (int (*)(void))dlsym(lib, "cuCtxSynchronize");
    int dev = 0;
    void *context = NULL, *module = NULL;
    if (!init || !device || !retain || !current || !load || !get || !bare.launch || !bare.sync ||
        init(0) || device(&dev, 0) || retain(&context, dev) || current(context) ||
        load(&module, ptx) || get(&bare.function, module, "dwconv_empty"))
        bare.function = NULL;
}

static void call(problem *p, int how) {
    if (how == PLANNED) TRY(dwconv_plan_forward(p->plan, p->x, p->w, NULL, p->y));
    else if (how == FORWARD) TRY(dwconv_forward(ctx, &p->d, p->x, p->w, NULL, p->y));
    else if (bare.launch(bare.function, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)) exit(1);
}

/* Median host microseconds per call over the batches. */
static double host_us(problem *p, int how) {
    double t[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        TRY(dwconv_synchronize(ctx));
        if (how == BARE && bare.sync()) exit(1);
        const double t0 = now_us();
        for (int i = 0; i < CALLS; i++) call(p, how);
        t[b] = (now_us() - t0) / CALLS;
    }
    TRY(dwconv_synchronize(ctx));
    if (how == BARE && bare.sync()) exit(1);
    qsort(t, BATCHES, sizeof t[0], by_value);
    return t[BATCHES / 2];
}

static void run(const char *name, int64_t B, int64_t C, int64_t L) {
    problem p;
    dwconv_desc_init(&p.d, B, C, L, 3);
    p.d.pad_left = p.d.pad_right = 1;
    TRY(dwconv_malloc(ctx, &p.x, (size_t)(B * C * L) * 4));
    TRY(dwconv_malloc(ctx, &p.y, (size_t)(B * C * L) * 4));
    TRY(dwconv_malloc(ctx, &p.w, (size_t)C * 3 * 4));
    TRY(dwconv_plan_create(&p.plan, ctx, &p.d));
    for (int i = 0; i < 20; i++) call(&p, FORWARD), call(&p, PLANNED); /* warm: pointers known */
    TRY(dwconv_synchronize(ctx));
    double ms = 0;
    TRY(dwconv_timer_start(ctx));
    for (int i = 0; i < CALLS; i++) call(&p, PLANNED);
    TRY(dwconv_timer_stop(ctx, &ms));
    const double forward = host_us(&p, FORWARD), planned = host_us(&p, PLANNED);
    printf("%-6s B%lld C%lld L%lld K3 f32: host us per call: dwconv_forward %.2f, "
           "dwconv_plan_forward %.2f; device us per call %.2f\n",
           name, (long long)B, (long long)C, (long long)L, forward, planned, ms * 1e3 / CALLS);
    TRY(dwconv_plan_destroy(p.plan));
    TRY(dwconv_free(ctx, p.x));
    TRY(dwconv_free(ctx, p.y));
    TRY(dwconv_free(ctx, p.w));
}

int main(void) {
    TRY(dwconv_context_create(&ctx, DWCONV_BACKEND_CUDA, 0));
    run("small", 1, 512, 8192);
    run("tiny", 1, 1, 64);
    bare_open();
    if (bare.function) {
        for (int i = 0; i < 20; i++) call(NULL, BARE);
        printf("floor: a bare cuLaunchKernel of an empty kernel: host us per call %.2f\n",
               host_us(NULL, BARE));
    } else {
        printf("floor: not measured (no libcuda.so.1 or its launch failed)\n");
    }
    TRY(dwconv_context_destroy(ctx));
    return 0;
}
