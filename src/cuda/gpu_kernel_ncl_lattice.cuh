/*
 * Channel-first (positions adjacent; rows anywhere), K >= GPU_LATTICE_MIN_K, dilation
 * equal to the stride: the arithmetic-bound kernel. Output o reads positions
 *     o*stride - pad + k*dilation = dilation*(o + k) - pad,
 * a plain stride-1, dilation-1 convolution over the lattice Q[n] = xp[dilation*n - pad].
 * A block is one warp (warp barriers only, so that every warp streams at its own pace,
 * as in lean; 128-thread blocks meeting at block barriers ran K31 slower,
 * bench/RESULTS-gpu.md run I). It walks consecutive tiles of
 * GPU_LATTICE_THREADS * GPU_LATTICE_RUN outputs of a row; it stages a tile's lattice
 * as f32 into shared memory (the next tile's new points in flight during this tile's
 * sums, the points two tiles share kept), and each lane computes GPU_LATTICE_RUN outputs in groups of one
 * vector's width V (lane tid's group g: tile outputs g * V * T + V * tid on), each group
 * with a register window that slides over GPU_LATTICE_CHUNK taps at a time: per chunk
 * V / 4 + 2 16-byte shared loads of x per group and two of weights feed 8 V fmas. A
 * warp's loads of a group and its stores are contiguous (no bank conflicts, whole
 * sectors); against runs of 16 consecutive outputs a lane in padded shared slots, K31
 * gained and K128 lost a little (bench/RESULTS-gpu.md run I). Each output's fmas
 * still run k = 0, 1, ... in order.
 */
#ifndef DWCONV_GPU_KERNEL_NCL_LATTICE_CUH
#define DWCONV_GPU_KERNEL_NCL_LATTICE_CUH

#include "gpu_elements.cuh"
#include "gpu_carried.cuh"
#include "gpu_families.h"

/* Q[n] = f32 of padded position p0 + dilation * n, n < points, into q[n]. */
template <int XT>
static __device__ __forceinline__ void gpu_lattice_stage(float *q, const typename gpu_elem<XT>::raw *xrow,
                                                         int64_t L, int mode, int64_t p0,
                                                         int64_t dilation, int64_t points, int tid) {
    const int T = GPU_LATTICE_THREADS, B = GPU_LATTICE_STAGE_BATCH;
    if (p0 >= 0 && p0 + dilation * (points - 1) < L) { /* no padding: plain loads */
        for (int64_t n0 = tid; n0 < points; n0 += B * T) {
            float v[B];
#pragma unroll
            for (int u = 0; u < B; u++)
                if (n0 + u * T < points) v[u] = gpu_elem<XT>::widen(xrow[p0 + dilation * (n0 + u * T)]);
#pragma unroll
            for (int u = 0; u < B; u++)
                if (n0 + u * T < points) q[n0 + u * T] = v[u];
        }
        return;
    }
    for (int64_t n0 = tid; n0 < points; n0 += B * T) { /* B loads in flight per thread */
        float v[B];
#pragma unroll
        for (int u = 0; u < B; u++) {
            const int64_t n = n0 + u * T;
            v[u] = n < points ? gpu_elem<XT>::widen(gpu_padded_raw<XT>(xrow, L, mode, p0 + dilation * n))
                              : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < B; u++)
            if (n0 + u * T < points) q[n0 + u * T] = v[u];
    }
}

/* The next tile's new points, in flight while this tile is computed: v[u] = Q[n] for
 * n = first + tid + u * T below count (Q[n] = f32 of padded position p0 + dilation * n;
 * the others are never read by a stored output). */
template <int XT>
static __device__ __forceinline__ void gpu_lattice_fetch(float *v, const typename gpu_elem<XT>::raw *xrow,
                                                         int64_t L, int mode, int64_t p0,
                                                         int64_t dilation, int64_t first,
                                                         int64_t count, int tid) {
    const int T = GPU_LATTICE_THREADS;
    if (p0 + dilation * first >= 0 && p0 + dilation * (count - 1) < L) { /* no padding */
#pragma unroll
        for (int u = 0; u < GPU_LATTICE_RUN; u++) {
            const int64_t n = first + tid + u * T;
            v[u] = n < count ? gpu_elem<XT>::widen(xrow[p0 + dilation * n]) : 0.0f;
        }
        return;
    }
#pragma unroll
    for (int u = 0; u < GPU_LATTICE_RUN; u++) {
        const int64_t n = first + tid + u * T;
        v[u] = n < count ? gpu_elem<XT>::widen(gpu_padded_raw<XT>(xrow, L, mode, p0 + dilation * n))
                         : 0.0f;
    }
}

/* acc[g * V + i] = the fma chain over the K taps of tile output g * V * T + V * tid + i
 * (V consecutive outputs per group, so that a warp's 16-byte shared loads and stores
 * are contiguous), from lattice point (that output) + k. */
template <int V>
static __device__ __forceinline__ void gpu_lattice_sums(const float *q, const float *ws, int tid, int K,
                                                        float *acc) {
    const int R = GPU_LATTICE_RUN, KB = GPU_LATTICE_CHUNK, G = R / V, T = GPU_LATTICE_THREADS;
    static_assert(GPU_LATTICE_RUN % V == 0 && (V + GPU_LATTICE_CHUNK) % 4 == 0,
                  "a lane's outputs are whole groups; windows are whole 16-byte loads");
    for (int kc = 0; kc < K; kc += KB) {
        float w[KB];
#pragma unroll
        for (int r = 0; r < KB / 4; r++) {
            const float4 f = *(const float4 *)(ws + kc + 4 * r);
            w[4 * r] = f.x, w[4 * r + 1] = f.y, w[4 * r + 2] = f.z, w[4 * r + 3] = f.w;
        }
#pragma unroll
        for (int g = 0; g < G; g++) {
            float xw[V + KB];
            const float *src = q + g * V * T + V * tid + kc;
#pragma unroll
            for (int r = 0; r < (V + KB) / 4; r++) {
                const float4 f = *(const float4 *)(src + 4 * r);
                xw[4 * r] = f.x, xw[4 * r + 1] = f.y, xw[4 * r + 2] = f.z, xw[4 * r + 3] = f.w;
            }
            float *ag = acc + g * V;
            if (kc + KB <= K) {
#pragma unroll
                for (int kk = 0; kk < KB; kk++)
#pragma unroll
                    for (int i = 0; i < V; i++) ag[i] = DWCONV_FMAF(xw[i + kk], w[kk], ag[i]);
            } else {
#pragma unroll
                for (int kk = 0; kk < KB; kk++)
                    if (kc + kk < K) {
#pragma unroll
                        for (int i = 0; i < V; i++) ag[i] = DWCONV_FMAF(xw[i + kk], w[kk], ag[i]);
                    }
            }
        }
    }
}

template <int XT, int WT>
__global__ GPU_LAUNCH_BOUNDS(GPU_LATTICE_THREADS, GPU_SM_BLOCKS_AT_MOST(GPU_LATTICE_MIN_BLOCKS))
void dwconv_ncl_lattice_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int T = GPU_LATTICE_THREADS, R = GPU_LATTICE_RUN, TILE = T * R;
    const int V = gpu_vec_width<XT>::value;
    const int tid = threadIdx.x;
    const int64_t L = a.length, L_out = a.output_length, K = a.kernel_size, D = a.dilation;
    const int64_t taps = gpu_lattice_taps(K), points = TILE + taps;
    /* consecutive tiles share `taps` points: the next one keeps them and loads only TILE
     * new ones, in flight during this tile's sums (when the shared points do not
     * overlap the new ones' places: taps <= TILE) */
    const bool carry = taps <= TILE;
    float *q = (float *)gpu_shared_base();
    float *ws = (float *)(gpu_shared_base() + gpu_lattice_weights_offset(K));
    const int64_t t_begin = (int64_t)blockIdx.x * a.tiles_per_block;
    const int64_t t_end = gpu_min64(t_begin + a.tiles_per_block, a.tiles_per_row);

    /* x: chunks of tiles along the row, y: channels, z: batch (each strided) */
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y) {
            const int64_t xoff = b * a.x_stride[0] + c * a.x_stride[1];
            const int64_t yoff = b * a.y_stride[0] + c * a.y_stride[1];
            const raw *xrow = (const raw *)a.x + xoff;
            /* runs start on y's 16-byte boundaries */
            const int hy = gpu_misalignment<XT>(a.y, yoff);
            if (t_begin * TILE - hy >= L_out) continue; /* the same for the whole block */

            gpu_sync_warp(); /* the previous row's reads are done */
            for (int64_t k = tid; k < taps; k += T)
                ws[k] = k < K ? gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]) : 0.0f;
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            /* the first tile's points: only what existing outputs read; later points only
             * feed unstored sums */
            int64_t j0 = t_begin * TILE - hy;
            gpu_lattice_stage<XT>(q, xrow, L, a.padding_mode, D * j0 - a.pad_left, D,
                                  gpu_min64(points, L_out - j0 + K - 1), tid);
            gpu_sync_warp();
            for (int64_t t = t_begin; t < t_end && j0 < L_out; t++, j0 += TILE) {
                const int64_t j1 = j0 + TILE; /* the next tile */
                const bool next = t + 1 < t_end && j1 < L_out;
                float v[R];
                if (next && carry)
                    gpu_lattice_fetch<XT>(v, xrow, L, a.padding_mode, D * j1 - a.pad_left, D, taps,
                                          gpu_min64(points, L_out - j1 + K - 1), tid);

                float acc[R];
#pragma unroll
                for (int i = 0; i < R; i++) acc[i] = bias;
                gpu_lattice_sums<V>(q, ws, tid, (int)K, acc);
                gpu_activate_all<R, XT>(a.activation, acc);

                /* group g: V consecutive outputs, one aligned vector where whole */
#pragma unroll
                for (int g = 0; g < R / V; g++) {
                    const int64_t jr = j0 + g * V * T + V * tid;
                    const int64_t first = gpu_max64(0, -jr), last = gpu_min64(V, L_out - jr);
                    if (last > first)
                        gpu_store_vector<XT>(a.y, yoff + jr, acc + g * V, (int)first, (int)last);
                }
                if (!next) continue;
                gpu_sync_warp(); /* this tile's reads are done */
                if (carry) {
                    for (int64_t n = tid; n < taps; n += T) q[n] = q[TILE + n];
                    gpu_sync_warp(); /* the shared points are read before they are overwritten */
#pragma unroll
                    for (int u = 0; u < R; u++) q[taps + tid + u * T] = v[u];
                } else {
                    gpu_lattice_stage<XT>(q, xrow, L, a.padding_mode, D * j1 - a.pad_left, D,
                                          gpu_min64(points, L_out - j1 + K - 1), tid);
                }
                gpu_sync_warp();
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NCL_LATTICE_CUH */
