/*
 * The GPU silu of contract 0.2 proved on the device, and timed against 0.1's.
 *
 *   1. every one of the 2^32 floats through gpu_activate_all (the kernels' own code
 *      path, DWCONV_ACT_SILU) on the device, against the scalar dwconv_silu on the host
 *      (all cores), bit for bit (a NaN must give a NaN; its payload may differ);
 *   2. gpu_rcp_rn(d) == RN(1/d) for every float d in [1, 2^126) (silu's divisor 1 + e^-x
 *      lies in [1, 2^125)): against __frcp_rn and against 1/d in double, rounded once;
 *   3. the silu's error against x / (1 + e^-x) in long double over every float: the
 *      largest in ulp where the result is normal, a histogram, the largest in 2^-149
 *      spacings where it is subnormal or zero;
 *   4. timing, CUDA events, median of 15: a copy, silu 0.2 and silu 0.1 (the old
 *      exponential and __fdiv_rn) over 1 GiB of f32 and of bf16 (the kernels' load,
 *      widen, activate, round, store), and silu alone in a compute-bound loop;
 *   5. the kernels' bf16 path (gpu_silu_rough where no near tie) rounded to bf16 against
 *      the contract's silu rounded to bf16, every float; the rough value's largest
 *      distance from the contract's in f32 units (it must stay within
 *      GPU_SILU_ROUGH_ULPS); then the same with the run-time gate shut (every bf16
 *      value through the contract's silu, as on a device the path is not proven on).
 *      Run before 4 (it needs no timing buffers).
 * Exit status 0 when 1, 2 and 5 hold, 1 when they do not, 2 when there is no device.
 *
 * From the source tree (nvcc 13; the host part may use any C++11 compiler):
 *   nvcc -O3 --fmad=false -gencode arch=compute_90,code=sm_90 -Xcompiler -ffp-contract=off \
 *     -I include -I src/common -I src/cuda bench/gpu/silu_exhaustive.cu -o /tmp/silu_exhaustive
 *   /tmp/silu_exhaustive
 * Instruction counts: cuobjdump -sass /tmp/silu_exhaustive, functions sass_silu_new and
 * sass_silu_old (one load, the silu, one store).
 */
#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

/* part 5 proves the bf16 path on the device it runs on, whatever its architecture
 * (the module runs it only where this program has passed: gpu_elements.cuh) */
#define DWCONV_GPU_SILU_ROUGH 1
#define DWCONV_GPU_SILU_ROUGH_TRY 1
#include "gpu_elements.cuh"

#define CHECK_CUDA(call)                                                                    \
    do {                                                                                    \
        cudaError_t err_ = (call);                                                          \
        if (err_ != cudaSuccess) {                                                          \
            printf("silu_exhaustive: %s: %s\n", #call, cudaGetErrorString(err_));          \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

/* ---- contract 0.1's silu (for the timing only) --------------------------------------- */

static __device__ __forceinline__ float old_exp(float x) {
    if (x != x) return x;
    if (x > 88.72283935546875f) return dwconv_f32_from_bits(0x7f800000u);
    if (x < -103.972084045410156f) return 0.0f;
    float shifted = __fmaf_rn(x, 1.44269502162933349609f, 12582912.0f);
    float n = shifted - 12582912.0f;
    float r = __fmaf_rn(n, -0.693359375f, x);
    r = __fmaf_rn(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = __fmaf_rn(p, r, 1.3981999507e-3f);
    p = __fmaf_rn(p, r, 8.3334519073e-3f);
    p = __fmaf_rn(p, r, 4.1665795894e-2f);
    p = __fmaf_rn(p, r, 1.6666665459e-1f);
    p = __fmaf_rn(p, r, 5.0000001201e-1f);
    float r2 = r * r;
    p = __fmaf_rn(p, r2, r);
    p = p + 1.0f;
    int32_t ni = (int32_t)n;
    int32_t n1 = ni / 2, n2 = ni - n1;
    float s1 = dwconv_f32_from_bits((uint32_t)(n1 + 127) << 23);
    float s2 = dwconv_f32_from_bits((uint32_t)(n2 + 127) << 23);
    return (p * s1) * s2;
}

static __device__ __forceinline__ float old_silu(float x) {
    return __fdiv_rn(x, 1.0f + old_exp(-x));
}

template <int N> static __device__ __forceinline__ void old_activate_all(float *v) {
#pragma unroll
    for (int i = 0; i < N; i++) v[i] = old_silu(v[i]);
}

/* ---- 1. silu of every float --------------------------------------------------------- */

/* out[i] = silu(bits base + i), 8 values a thread, as a 16-bit kernel holds them. */
__global__ void silu_chunk(uint32_t base, uint32_t count, float *out) {
    const uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) * 8u;
    if (i >= count) return;
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = dwconv_f32_from_bits(base + i + (uint32_t)k);
    gpu_activate_all<8, DWCONV_F32>(DWCONV_ACT_SILU, v);
#pragma unroll
    for (int k = 0; k < 8; k++) out[i + k] = v[k];
}

/* ---- 5. silu rounded to bf16 --------------------------------------------------------- */

struct bf16_tally {
    unsigned long long checked, differ, near_tie, hot, rough_differs;
    unsigned long long f16_near[2], f16_differs; /* f16 (no such path yet): near ties at 32 and 8 units */
    unsigned long long test_drawn, test_catches; /* tests/check_gpu.c's draws, and those the rough value alone gets wrong */
    unsigned first;   /* first x whose bf16 differs, or 0xffffffff */
    unsigned max_ulps; /* largest |bits(rough) - bits(contract)| where |x| <= 86 */
};

/* Every float x, 8 consecutive a thread as a 16-bit kernel holds them: the kernels'
 * bf16 path (gpu_activate_all<8, DWCONV_BF16>, then the kernels' rounding) against the
 * contract's silu rounded the same way (gpu_silu_exact, which part 1 proves equal to
 * dwconv_silu); and the rough value's distance from the contract's in f32 units. */
__global__ void bf16_all(bf16_tally *t) {
    unsigned long long checked = 0, differ = 0, near = 0, hot = 0, rough_differs = 0;
    unsigned long long f16_near[2] = {0, 0}, f16_differs = 0, drawn = 0, catches = 0;
    unsigned max_ulps = 0;
    const gpu_tie_window proven_window = GPU_TIE_WINDOW(GPU_SILU_ROUGH_ULPS);
    for (uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; g < (1ull << 29);
         g += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t base = (uint32_t)(g * 8);
        float v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = dwconv_f32_from_bits(base + (uint32_t)k);
        gpu_activate_all<8, DWCONV_BF16>(DWCONV_ACT_SILU, v);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float x = dwconv_f32_from_bits(base + (uint32_t)k), exact = gpu_silu_exact(x);
            const uint16_t got = gpu_elem<DWCONV_BF16>::narrow(v[k]), want = gpu_elem<DWCONV_BF16>::narrow(exact);
            const bool both_nan = v[k] != v[k] && exact != exact;
            checked++;
            if (got != want && !both_nan) {
                differ++;
                atomicMin(&t->first, base + (uint32_t)k);
            }
            if (fabsf(x) <= DWCONV_SILU_COLD) {
                const float r = gpu_silu_rough(x);
                const int64_t d = (int64_t)dwconv_f32_bits(r) - (int64_t)dwconv_f32_bits(exact);
                const unsigned ad = (unsigned)(d < 0 ? -d : d);
                const bool rough_wrong = gpu_elem<DWCONV_BF16>::narrow(r) != want; /* what the near-tie test guards */
                hot++;
                if (ad > max_ulps) max_ulps = ad;
                if (gpu_bf16_near_tie(r, proven_window)) near++;
                if (rough_wrong) rough_differs++;
                /* silu_near_rounding_ties draws z where exact +- 2^-20 of itself rounds two ways */
                if (gpu_elem<DWCONV_BF16>::narrow(exact - fabsf(exact) * 0x1p-20f) !=
                    gpu_elem<DWCONV_BF16>::narrow(exact + fabsf(exact) * 0x1p-20f)) {
                    drawn++;
                    if (rough_wrong) catches++;
                }
                /* f16 would round at bit 13 where |y| >= 2^-14 (a normal f16) */
                const uint32_t a = dwconv_f32_bits(r) & 0x7fffffffu;
                for (int m = 0; m < 2; m++) {
                    const uint32_t M = m ? 8u : 32u;
                    if (a < 0x38800000u || ((a + (M - 0x1000u)) & 0x1fffu) <= 2u * M) f16_near[m]++;
                }
                if (gpu_elem<DWCONV_F16>::narrow(r) != gpu_elem<DWCONV_F16>::narrow(exact)) f16_differs++;
            }
        }
    }
    atomicAdd(&t->checked, checked);
    atomicAdd(&t->differ, differ);
    atomicAdd(&t->near_tie, near);
    atomicAdd(&t->hot, hot);
    atomicAdd(&t->rough_differs, rough_differs);
    atomicAdd(&t->f16_near[0], f16_near[0]);
    atomicAdd(&t->f16_near[1], f16_near[1]);
    atomicAdd(&t->f16_differs, f16_differs);
    atomicAdd(&t->test_drawn, drawn);
    atomicAdd(&t->test_catches, catches);
    atomicMax(&t->max_ulps, max_ulps);
}

/* ---- 2. the reciprocal ---------------------------------------------------------------- */

struct rcp_tally {
    unsigned long long checked, vs_frcp, vs_double;
    unsigned first; /* first differing d's bits, or 0xffffffff */
};

__global__ void rcp_all(rcp_tally *t) {
    const uint32_t lo = 0x3f800000u, hi = 0x7e800000u; /* [1, 2^126) */
    unsigned long long checked = 0, vs_frcp = 0, vs_double = 0;
    for (uint32_t u = lo + blockIdx.x * blockDim.x + threadIdx.x; u < hi;
         u += gridDim.x * blockDim.x) {
        const float d = dwconv_f32_from_bits(u);
        const uint32_t got = dwconv_f32_bits(gpu_rcp_rn(d));
        const bool bad_frcp = got != dwconv_f32_bits(__frcp_rn(d));
        const bool bad_double = got != dwconv_f32_bits((float)(1.0 / (double)d));
        checked++;
        if (bad_frcp) vs_frcp++;
        if (bad_double) vs_double++;
        if (bad_frcp || bad_double) atomicMin(&t->first, u);
    }
    atomicAdd(&t->checked, checked);
    atomicAdd(&t->vs_frcp, vs_frcp);
    atomicAdd(&t->vs_double, vs_double);
}

/* ---- 4. timing ----------------------------------------------------------------------- */

__global__ void fill_inputs(float *x, size_t n) { /* about uniform in [-12, 12] */
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        x[i] = ((float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f) * 24.0f;
    }
}

/* the same values rounded to bf16, two a 32-bit word */
__global__ void fill_inputs_bf16(const float *x, uint32_t *x16, size_t words) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        x16[i] = (uint32_t)dwconv_f32_to_bf16(x[2 * i]) |
                 (uint32_t)dwconv_f32_to_bf16(x[2 * i + 1]) << 16;
}

enum { ACT_COPY, ACT_NEW, ACT_OLD, ACT_EXACT };

/* f32: one 16-byte vector of 4 values a thread */
template <int WHICH> __global__ void stream_f32(const uint4 *x, uint4 *y, size_t vectors) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= vectors) return;
    float v[4];
    gpu_vec_widen<DWCONV_F32>(gpu_load16(x + i), v);
    if (WHICH == ACT_NEW) gpu_activate_all<4, DWCONV_F32>(DWCONV_ACT_SILU, v);
    if (WHICH == ACT_OLD) old_activate_all<4>(v);
    gpu_store16(y + i, gpu_vec_narrow<DWCONV_F32>(v));
}

/* bf16: one 16-byte vector of 8 values a thread, widened, rounded back */
template <int WHICH> __global__ void stream_bf16(const uint4 *x, uint4 *y, size_t vectors) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= vectors) return;
    float v[8];
    gpu_vec_widen<DWCONV_BF16>(gpu_load16(x + i), v);
    if (WHICH == ACT_NEW) gpu_activate_all<8, DWCONV_BF16>(DWCONV_ACT_SILU, v); /* rough where it may */
    if (WHICH == ACT_EXACT) gpu_activate_all<8, DWCONV_F32>(DWCONV_ACT_SILU, v); /* the contract's everywhere */
    if (WHICH == ACT_OLD) old_activate_all<8>(v);
    gpu_store16(y + i, gpu_vec_narrow<DWCONV_BF16>(v));
}

/* compute-bound: 8 values a thread, ITER rounds of v = silu(v) / 2 + x / 2 (which stays
 * within [-12, 12], so the hot path is what is timed) */
enum { ITER = 64 };
template <int WHICH> __global__ void chain(const float *x, float *y, size_t n) {
    const size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 8;
    if (i >= n) return;
    float x0[8], v[8];
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = x[i + k], x0[k] = 0.5f * v[k];
    for (int it = 0; it < ITER; it++) {
        if (WHICH == ACT_NEW) gpu_activate_all<8, DWCONV_F32>(DWCONV_ACT_SILU, v);
        else old_activate_all<8>(v);
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = v[k] * 0.5f + x0[k];
    }
#pragma unroll
    for (int k = 0; k < 8; k++) y[i + k] = v[k];
}

/* for cuobjdump: one load, the silu, one store */
__global__ void sass_silu_new(const float *x, float *y) {
    float v[1] = {x[threadIdx.x]};
    gpu_activate_all<1, DWCONV_F32>(DWCONV_ACT_SILU, v);
    y[threadIdx.x] = v[0];
}
__global__ void sass_silu_old(const float *x, float *y) { y[threadIdx.x] = old_silu(x[threadIdx.x]); }

template <typename F> static float time_ms(F launch) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    for (int w = 0; w < 3; w++) launch();
    std::vector<float> ms;
    for (int r = 0; r < 15; r++) {
        CHECK_CUDA(cudaEventRecord(a));
        launch();
        CHECK_CUDA(cudaEventRecord(b));
        CHECK_CUDA(cudaEventSynchronize(b));
        float t = 0;
        CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    CHECK_CUDA(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    cudaEventDestroy(a), cudaEventDestroy(b);
    return ms[ms.size() / 2];
}

/* ---- host: comparison and error -------------------------------------------------------- */

struct host_tally {
    unsigned long long checked = 0, differ = 0, nan_payload = 0, normal = 0, subnormal = 0;
    unsigned first_differ = 0xffffffffu;
    double worst_ulp = 0, worst_sub = 0;
    unsigned worst_ulp_bits = 0, worst_sub_bits = 0;
    unsigned long long hist[40] = {0}; /* tenths of an ulp, the last bin >= 3.9 */
};

static long double ulp_of(long double v) {
    v = fabsl(v);
    if (v < FLT_MIN) return 0x1p-149L;
    int e;
    frexpl(v, &e);
    return ldexpl(1.0L, e - 24);
}

static void host_compare(const float *gpu, uint32_t base, uint32_t count, host_tally *t) {
    for (uint32_t i = 0; i < count; i++) {
        const uint32_t u = base + i;
        const float x = dwconv_f32_from_bits(u), want = dwconv_silu(x), got = gpu[i];
        t->checked++;
        if (dwconv_f32_bits(got) != dwconv_f32_bits(want)) {
            if (got != got && want != want) {
                t->nan_payload++;
            } else {
                t->differ++;
                t->first_differ = std::min(t->first_differ, u);
            }
        }
        if (x != x || std::isinf(x)) continue;
        const long double X = x, exact = X / (1.0L + expl(-X));
        const double err = (double)(fabsl((long double)want - exact) / ulp_of(exact));
        if (fabsl(exact) < FLT_MIN) {
            t->subnormal++;
            if (err > t->worst_sub) t->worst_sub = err, t->worst_sub_bits = u;
        } else {
            t->normal++;
            if (err > t->worst_ulp) t->worst_ulp = err, t->worst_ulp_bits = u;
            t->hist[std::min(39, (int)(err * 10))]++;
        }
    }
}

int main() {
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        printf("silu_exhaustive: no device\n");
        return 2;
    }
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    printf("silu_exhaustive on %s (sm_%d%d), %u host threads\n", prop.name, prop.major, prop.minor,
           threads);

    /* 2. reciprocal */
    rcp_tally *rt;
    CHECK_CUDA(cudaMallocManaged(&rt, sizeof *rt));
    *rt = rcp_tally{0, 0, 0, 0xffffffffu};
    rcp_all<<<prop.multiProcessorCount * 8, 256>>>(rt);
    CHECK_CUDA(cudaDeviceSynchronize());
    printf("rcp   gpu_rcp_rn(d) for every float d in [1, 2^126): %llu values, %llu differ from "
           "__frcp_rn, %llu from 1/d in double",
           rt->checked, rt->vs_frcp, rt->vs_double);
    if (rt->first != 0xffffffffu) printf(" (first d %a)", dwconv_f32_from_bits(rt->first));
    printf("\n");
    const bool rcp_ok = rt->checked == 0x7e800000ull - 0x3f800000ull && rt->vs_frcp == 0 &&
                        rt->vs_double == 0;

    /* 1 and 3. every float */
    const uint32_t chunk = 1u << 28;
    float *dout, *hout;
    CHECK_CUDA(cudaMalloc(&dout, chunk * sizeof(float)));
    CHECK_CUDA(cudaMallocHost(&hout, chunk * sizeof(float)));
    std::vector<host_tally> tallies(threads);
    for (uint64_t base = 0; base < (1ull << 32); base += chunk) {
        silu_chunk<<<chunk / 8 / 256, 256>>>((uint32_t)base, chunk, dout);
        CHECK_CUDA(cudaMemcpy(hout, dout, chunk * sizeof(float), cudaMemcpyDeviceToHost));
        std::vector<std::thread> pool;
        for (unsigned k = 0; k < threads; k++) {
            const uint32_t lo = (uint32_t)((uint64_t)chunk * k / threads);
            const uint32_t hi = (uint32_t)((uint64_t)chunk * (k + 1) / threads);
            pool.emplace_back(host_compare, hout + lo, (uint32_t)base + lo, hi - lo, &tallies[k]);
        }
        for (auto &th : pool) th.join();
    }
    host_tally all;
    for (const host_tally &t : tallies) {
        all.checked += t.checked, all.differ += t.differ, all.nan_payload += t.nan_payload;
        all.normal += t.normal, all.subnormal += t.subnormal;
        all.first_differ = std::min(all.first_differ, t.first_differ);
        if (t.worst_ulp > all.worst_ulp) all.worst_ulp = t.worst_ulp, all.worst_ulp_bits = t.worst_ulp_bits;
        if (t.worst_sub > all.worst_sub) all.worst_sub = t.worst_sub, all.worst_sub_bits = t.worst_sub_bits;
        for (int b = 0; b < 40; b++) all.hist[b] += t.hist[b];
    }
    printf("silu  gpu_activate_all vs the scalar dwconv_silu, every float: %llu values, %llu differ",
           all.checked, all.differ);
    if (all.differ) printf(" (first x %a)", dwconv_f32_from_bits(all.first_differ));
    printf(", %llu NaNs with another payload\n", all.nan_payload);
    const bool silu_ok = all.checked == (1ull << 32) && all.differ == 0;
    printf("error vs x/(1+e^-x) in long double: normal results (%llu): max %.4f ulp at x = %a;\n"
           "      subnormal or zero results (%llu): max %.4f x 2^-149 at x = %a\n",
           all.normal, all.worst_ulp, dwconv_f32_from_bits(all.worst_ulp_bits), all.subnormal,
           all.worst_sub, dwconv_f32_from_bits(all.worst_sub_bits));
    printf("      ulp histogram (normal results):");
    for (int b = 0; b < 40; b++)
        if (all.hist[b]) printf("%s [%.1f,%.1f) %llu", b % 4 == 0 ? "\n       " : "", b / 10.0,
                                (b + 1) / 10.0, all.hist[b]);
    printf("\n");

    /* 5. rounded to bf16 */
    auto bf16_run = [&](int gate) { /* part 5's kernel with the run-time gate open or shut */
        bf16_tally *t;
        const gpu_tie_window w = GPU_TIE_WINDOW(gate ? GPU_SILU_ROUGH_ULPS : GPU_SILU_ROUGH_UNPROVEN);
        CHECK_CUDA(cudaMemcpyToSymbol(gpu_silu_tie_window, &w, sizeof w));
        CHECK_CUDA(cudaMallocManaged(&t, sizeof *t));
        *t = bf16_tally{0, 0, 0, 0, 0, {0, 0}, 0, 0, 0, 0xffffffffu, 0};
        bf16_all<<<prop.multiProcessorCount * 8, 256>>>(t);
        CHECK_CUDA(cudaDeviceSynchronize());
        return t;
    };
    bf16_tally *bt = bf16_run(1);
    printf("bf16  the kernels' bf16 silu vs the contract's rounded to bf16, every float: %llu values, "
           "%llu differ", bt->checked, bt->differ);
    if (bt->differ) printf(" (first x %a)", dwconv_f32_from_bits(bt->first));
    printf(";\n      |x| <= 86 (%llu): the rough value at most %u f32 units from the contract's "
           "(margin %u), %llu near a tie (%.4f%%) took the contract's path;\n      without that test %llu "
           "would round to another bf16\n",
           bt->hot, bt->max_ulps, GPU_SILU_ROUGH_ULPS, bt->near_tie, 100.0 * bt->near_tie / (bt->hot ? bt->hot : 1),
           bt->rough_differs);
    printf("      f16 (not used): near ties at 32 units %.4f%%, at 8 units %.4f%%; the rough value "
           "rounds to another f16 for %llu\n", 100.0 * bt->f16_near[0] / (bt->hot ? bt->hot : 1),
           100.0 * bt->f16_near[1] / (bt->hot ? bt->hot : 1), bt->f16_differs);
    printf("      the test's draws (silu +- 2^-20 rounds two ways): %llu floats, %.2f%% of them would "
           "round wrong from the rough value alone\n", bt->test_drawn,
           100.0 * bt->test_catches / (bt->test_drawn ? bt->test_drawn : 1));
    /* the same with the gate shut: what a device the path is not proven on runs */
    bf16_tally *shut = bf16_run(0);
    const gpu_tie_window open = GPU_TIE_WINDOW(GPU_SILU_ROUGH_ULPS); /* part 4 times the kernels' path */
    CHECK_CUDA(cudaMemcpyToSymbol(gpu_silu_tie_window, &open, sizeof open));
    printf("      the gate shut (a device the path is not proven on): %llu values, %llu differ\n",
           shut->checked, shut->differ);
    const bool bf16_ok = bt->checked == (1ull << 32) && bt->differ == 0 &&
                         bt->max_ulps <= GPU_SILU_ROUGH_ULPS && shut->checked == (1ull << 32) &&
                         shut->differ == 0;

    /* 4. timing */
    const size_t bytes = (size_t)1 << 30;
    uint4 *x, *x16, *y;
    CHECK_CUDA(cudaMalloc(&x, bytes));
    CHECK_CUDA(cudaMalloc(&x16, bytes));
    CHECK_CUDA(cudaMalloc(&y, bytes));
    fill_inputs<<<4096, 256>>>((float *)x, bytes / 4);
    float *x32;
    CHECK_CUDA(cudaMalloc(&x32, 2 * bytes));
    fill_inputs<<<4096, 256>>>(x32, bytes / 2);
    fill_inputs_bf16<<<4096, 256>>>(x32, (uint32_t *)x16, bytes / 4);
    CHECK_CUDA(cudaDeviceSynchronize());
    cudaFree(x32);
    const size_t vectors = bytes / 16;
    const unsigned blocks = (unsigned)((vectors + 255) / 256);
    float f_copy = time_ms([&] { stream_f32<ACT_COPY><<<blocks, 256>>>(x, y, vectors); });
    float f_new = time_ms([&] { stream_f32<ACT_NEW><<<blocks, 256>>>(x, y, vectors); });
    float f_old = time_ms([&] { stream_f32<ACT_OLD><<<blocks, 256>>>(x, y, vectors); });
    float b_copy = time_ms([&] { stream_bf16<ACT_COPY><<<blocks, 256>>>(x16, y, vectors); });
    float b_new = time_ms([&] { stream_bf16<ACT_NEW><<<blocks, 256>>>(x16, y, vectors); });
    float b_old = time_ms([&] { stream_bf16<ACT_OLD><<<blocks, 256>>>(x16, y, vectors); });
    float b_exact = time_ms([&] { stream_bf16<ACT_EXACT><<<blocks, 256>>>(x16, y, vectors); });
    const size_t n_chain = (size_t)1 << 24;
    const unsigned chain_blocks = (unsigned)(n_chain / 8 / 256);
    float c_new = time_ms([&] { chain<ACT_NEW><<<chain_blocks, 256>>>((float *)x, (float *)y, n_chain); });
    float c_old = time_ms([&] { chain<ACT_OLD><<<chain_blocks, 256>>>((float *)x, (float *)y, n_chain); });
    const double gb = 2.0 * bytes / 1e9;
    printf("time  1 GiB in + 1 GiB out, values in [-12, 12], median of 15 (copy: the same kernel\n"
           "      without the activation):\n");
    printf("      f32 : copy %.3f ms (%.0f GB/s)  silu 0.2 %.3f ms (x%.3f)  silu 0.1 %.3f ms (x%.3f)\n",
           f_copy, gb / f_copy * 1e3, f_new, f_new / f_copy, f_old, f_old / f_copy);
    printf("      bf16: copy %.3f ms (%.0f GB/s)  silu 0.2 %.3f ms (x%.3f)  silu 0.1 %.3f ms (x%.3f)\n",
           b_copy, gb / b_copy * 1e3, b_new, b_new / b_copy, b_old, b_old / b_copy);
    printf("      bf16: the contract's silu on every value (no rough path) %.3f ms (x%.3f)\n", b_exact,
           b_exact / b_copy);
    const double silus = (double)n_chain * ITER;
    printf("      compute-bound silu: 0.2 %.1f G/s, 0.1 %.1f G/s (0.2 is x%.2f faster)\n",
           silus / c_new / 1e6, silus / c_old / 1e6, c_old / c_new);
    cudaFree(x), cudaFree(x16), cudaFree(y), cudaFree(dout), cudaFreeHost(hout), cudaFree(rt);

    cudaFree(bt);
    cudaFree(shut);
    const bool ok = rcp_ok && silu_ok && bf16_ok;
    printf("%s\n", ok ? "PASS: the GPU silu is the contract's, bit for bit, its reciprocal is "
                        "correctly rounded, and its bf16 path rounds to the contract's bf16"
                      : "FAIL");
    return ok ? 0 : 1;
}
