/*
 * Channel-first, dilation == stride (output o reads lattice points Q[o + k], Q[n] =
 * xp[D n - pad], as in lattice), K up to GPU_WIDE_MAX_K: blocks of one warp, a tile of
 * GPU_WARP runs of GPU_WIDE_CHUNK outputs of a row, a lane per run. Lattice keeps a
 * tile's points once and has each lane gather its windows from them; here each lane
 * gets the points its run reads, [64 L, 64 L + 64 + K - 1) of the tile, as f32 in a
 * shared column of its own (the next run's first K - 1 repeated), columns an odd number
 * of words apart: lanes reading the same slot of their columns hit distinct banks, and
 * a lane's reads are its column's base plus constants, so that the sums
 * (gpu_wide_sums, register blocks of GPU_WIDE_RUN outputs by GPU_WIDE_TAPS taps, each
 * output an fmaf chain in k order from the bias) carry no address arithmetic. The
 * activated outputs go over the points the run has finished with, then out, coalesced.
 *
 * Grid: x = tiles along a row, y = channels, z = batch (each strided).
 */
#ifndef DWCONV_GPU_KERNEL_NCL_WIDE_CUH
#define DWCONV_GPU_KERNEL_NCL_WIDE_CUH

#include "gpu_carried.cuh"
#include "gpu_wide_sums.cuh"

static_assert(GPU_WIDE_CHUNK == 64, "a run's slot and column by shift and mask");

template <int XT, int WT>
__global__ GPU_LAUNCH_BOUNDS(GPU_WARP, GPU_SM_BLOCKS_AT_MOST(GPU_WIDE_MIN_BLOCKS))
void dwconv_ncl_wide_kernel(gpu_conv_args a) {
    if (gpu_skipped(a)) return; /* bad packed offsets: nothing written */
    typedef typename gpu_elem<XT>::raw raw;
    typedef typename gpu_elem<WT>::raw wraw;
    const int lane = threadIdx.x, K = (int)a.kernel_size, SPAN = K - 1, W = gpu_wide_column(SPAN);
    const int CH = GPU_WIDE_CHUNK, TILE = GPU_WARP * GPU_WIDE_CHUNK, R = GPU_WIDE_RUN;
    const int64_t L = a.length, L_out = a.output_length, D = a.dilation;
    float *xc = (float *)gpu_shared_base(), *ws = xc + gpu_wide_weights_at(K);
    float *xl = xc + lane * W; /* the lane's column: point (run start + i) at xl[i] */
    for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z)
        for (int64_t c = blockIdx.y; c < a.channels; c += gridDim.y) {
            const raw *xrow = (const raw *)a.x + b * a.x_stride[0] + c * a.x_stride[1];
            raw *yrow = (raw *)a.y + b * a.y_stride[0] + c * a.y_stride[1];
            const float bias = a.bias ? gpu_elem<WT>::widen(((const wraw *)a.bias)[c]) : 0.0f;
            if (blockIdx.x >= a.tiles_per_row) continue;
            /* the row's weights (the previous row's last reads were before its copy-out's
             * barrier; the first tile's barrier orders these writes before its sums) */
            for (int k = lane; k < gpu_wide_taps(K); k += GPU_WARP)
                ws[k] = k < K ? gpu_elem<WT>::widen(((const wraw *)a.weight)[c * K + k]) : 0.0f;
            for (int64_t tile = blockIdx.x; tile < a.tiles_per_row; tile += gridDim.x) {
                const int64_t t0 = tile * TILE, p0 = D * t0 - a.pad_left; /* Q[t0 + r] at p0 + D r */
                const int n_out = (int)gpu_min64(TILE, L_out - t0), points = n_out + SPAN;
                gpu_sync_warp(); /* the previous tile's reads are done */
                /* point r: slot r - 64 col of each column col whose run reads it (col
                 * from r / 64 down while that slot is below 64 + span) */
                if (XT == DWCONV_F32 && D == 1) { /* column by column: runs of adjacent positions */
                    for (int col = 0; col < GPU_WARP; col++) {
                        const int r0 = CH * col, r1 = CH * col + CH + SPAN < points ? CH * col + CH + SPAN : points;
                        float *to = xc + col * W - r0; /* to[r]: point r's slot */
                        if (p0 + r0 >= 0 && p0 + r1 <= L) { /* inside the row: no test an element */
                            for (int r = r0 + lane; r < r1; r += GPU_WARP) gpu_copy4_async(to + r, xrow + (p0 + r));
                        } else {
                            for (int r = r0 + lane; r < r1; r += GPU_WARP) {
                                const int64_t pos = p0 + r;
                                if (pos >= 0 && pos < L) gpu_copy4_async(to + r, xrow + pos);
                                else to[r] = gpu_elem<XT>::widen(gpu_padded_raw<XT>(xrow, L, a.padding_mode, pos));
                            }
                        }
                    }
                    gpu_copy_wait();
                } else { /* 8 loads in flight a lane */
                    const int B = 8;
                    for (int r0 = lane; r0 < points; r0 += B * GPU_WARP) {
                        float v[B];
#pragma unroll
                        for (int u = 0; u < B; u++) {
                            const int64_t pos = p0 + D * (r0 + u * GPU_WARP);
                            if (r0 + u * GPU_WARP < points)
                                v[u] = gpu_elem<XT>::widen(pos >= 0 && pos < L ? xrow[pos]
                                                                               : gpu_padded_raw<XT>(xrow, L, a.padding_mode, pos));
                        }
#pragma unroll
                        for (int u = 0; u < B; u++) {
                            const int r = r0 + u * GPU_WARP;
                            if (r >= points) continue;
                            for (int col = r / CH; col >= 0 && r - CH * col < CH + SPAN; col--) /* span / 64 + 1 at most */
                                if (col < GPU_WARP) xc[col * W + r - CH * col] = v[u];
                        }
                    }
                }
                gpu_sync_warp();

                /* the lane's run: register blocks, then the last few one at a time;
                 * each output over its own point (read by no later output of the run) */
                const int n = (int)gpu_max64(0, gpu_min64(CH, n_out - CH * lane));
                int j0 = 0;
                for (; j0 + R <= n; j0 += R) {
                    float acc[R];
#pragma unroll
                    for (int j = 0; j < R; j++) acc[j] = bias;
                    gpu_wide_sums<R>(xl + j0, ws, K, acc);
                    gpu_activate_all<R>(a.activation, acc);
#pragma unroll
                    for (int j = 0; j < R; j++) xl[j0 + j] = acc[j];
                }
                for (; j0 < n; j0++) {
                    float acc = gpu_wide_sum(xl + j0, ws, K, bias);
                    gpu_activate_all<1>(a.activation, &acc);
                    xl[j0] = acc;
                }
                gpu_sync_warp();
                for (int d = lane; d < n_out; d += GPU_WARP) /* (d >= 0: d / 64 as a shift) */
                    yrow[t0 + d] = gpu_elem<XT>::narrow(xc[(d >> 6) * W + (d & (CH - 1))]);
            }
        }
}

#endif /* DWCONV_GPU_KERNEL_NCL_WIDE_CUH */
