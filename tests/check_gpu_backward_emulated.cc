/*
 * The GPU backward kernels, run on the CPU by tests/gpu_emulate.h, against the scalar
 * reference bit for bit: random descriptors of every option (K, stride, dilation, pads,
 * the four padding modes, bias, activations, dtypes, gradient dtypes, any subset of
 * dx, dweight and dbias) with strided x, dy and dx of every class, pointers on and off
 * 16-byte boundaries, and tiny launch limits so that every grid-strided loop takes
 * several turns. It fails when an output differs from the reference, when a kernel
 * writes beside dx, dweight or dbias (poisoned guards, and the gaps of dx's extent),
 * touches memory past its buffers (inaccessible pages), or when the plan's kernels are
 * not the ones the case is built for: the warp kernel exactly where its predicate
 * (gpu_bwd_warp_fits) says, the wide kernel exactly where its own (gpu_bwd_wide_fits)
 * says and the warp kernel does not, the channel-first tile kernel exactly where its own
 * (gpu_bwd_tile_chunks) says and neither of those does, the channel-last nlc kernel exactly where its
 * own (gpu_bwd_nlc_fits) says and the tile kernel does not, the chunk kernel elsewhere; the gather kernel
 * only the row ends under a non-zeros padding mode (every input only when the chunk
 * kernel's ring cannot fit).
 * Exit status: 0 pass, 1 fail, 77 skip (no ucontext.h). DWCONV_TEST_QUICK=1 runs fewer.
 */
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_bwd_cases.h"
#include "gpu_cases.h"
extern "C" {
#include "internal.h"
}
#include "gpu_emulate.h"
#include "gpu_kernels.cuh"

namespace {

/* What ran, over the whole run. */
struct {
    int cases, chunk_dx, gather_edges, gather_all, sums, warp, warp_gather, wide, wide_gather, tile, tile_gather,
        nlc, nlc_gather, states;
} seen;

/* Runs c's plan in the emulator with inputs offset by `shift` elements and outputs by
 * `oshift`; 0 when the outputs match and nothing beside them was written. */
int run_case(const gpu_bwd_case *c, int shift, int oshift, char *why, size_t why_size) {
    const size_t xs = dwconv_dtype_size(c->desc.dtype), ws = dwconv_dtype_size(c->desc.weight_dtype);
    const size_t gs = dwconv_dtype_size((dwconv_dtype)c->grad_dtype);
    gpu_emulate_buffer x(c->x_bytes, shift * xs, 0), dy(c->dy_bytes, shift * xs, 0);
    gpu_emulate_buffer w(c->weight_bytes, shift * ws, 0), bias(c->bias_bytes, shift * ws, 0);
    gpu_emulate_buffer state(c->state_bytes, shift * xs, 0);
    gpu_emulate_buffer dstate_out(c->dstate_out_bytes, shift * xs, 0);
    const size_t out_size[GPU_BWD_OUTPUTS] = {xs, gs, gs, xs};
    gpu_emulate_buffer *out[GPU_BWD_OUTPUTS] = {NULL, NULL, NULL, NULL};
    void *at[GPU_BWD_OUTPUTS] = {NULL, NULL, NULL, NULL};
    int failed = !x.at || !dy.at || !w.at || !bias.at || !state.at || !dstate_out.at;
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++)
        if (c->out_bytes[o]) { /* poisoned, guards included */
            out[o] = new gpu_emulate_buffer(c->out_bytes[o], oshift * out_size[o], GPU_CASE_GUARD);
            if (!(at[o] = out[o]->at)) failed = 1;
        }
    int result = -1;
    dwconv_problem p;
    if (failed) {
        snprintf(why, why_size, "%s: no memory for the buffers", gpu_bwd_case_string(c));
    } else if (memcpy(x.at, c->x, c->x_bytes), memcpy(dy.at, c->dy, c->dy_bytes),
               memcpy(w.at, c->weight, c->weight_bytes), c->bias && memcpy(bias.at, c->bias, c->bias_bytes),
               c->state && memcpy(state.at, c->state, c->state_bytes),
               c->dstate_out && memcpy(dstate_out.at, c->dstate_out, c->dstate_out_bytes),
               gpu_bwd_case_problem(&p, c, x.at, w.at, c->bias ? bias.at : NULL, dy.at,
                                    c->state ? state.at : NULL,
                                    c->dstate_out ? dstate_out.at : NULL, at) != 0) {
        snprintf(why, why_size, "%s: %s", gpu_bwd_case_string(c), dwconv_last_error());
    } else {
        gpu_bwd_args a = gpu_bwd_args_make(&p);
        gpu_bwd_plan plan;
        gpu_bwd_plan_make(&a, &plan);
        const size_t bytes = gpu_bwd_scratch_bytes(&plan);
        void *scratch = bytes ? malloc(bytes) : NULL;
        if (scratch) memset(scratch, 0xff, bytes); /* NaN: a partial never written shows */
        gpu_bwd_set_scratch(&a, &plan, scratch);
        /* the plan is the one the case is built for */
        const int64_t L = c->desc.length;
        const int64_t edge = gpu_bwd_edge(&a);
        int gather = 0, chunk = 0, tile = 0, nlc = 0, warp = 0, wide = 0;
        for (int s = 0; s < plan.steps; s++) {
            gather += plan.step[s].kernel == gpu_bwd_typed<gpu_bwd_gather_kernels>(&a);
            chunk += plan.step[s].kernel == gpu_bwd_typed<gpu_bwd_chunk_kernels>(&a);
            tile += plan.step[s].kernel == gpu_bwd_typed<gpu_bwd_tile_kernels>(&a);
            nlc += plan.step[s].kernel == gpu_bwd_nlc_instance(&a);
            warp += plan.step[s].kernel == gpu_bwd_warp_instance(&a);
            wide += plan.step[s].kernel == gpu_bwd_typed<gpu_bwd_wide_kernels>(&a);
        }
        /* the warp and wide kernels' dx: all but the row ends of the padding mode and the inputs
         * an output outside the row reads */
        const int64_t warp_lo = std::max<int64_t>(edge, a.span - a.pad_left);
        const int64_t warp_hi = std::max<int64_t>(edge, L - a.output_length * a.stride + a.pad_left);
        const char *wrong = NULL;
        if ((warp != 0) != gpu_bwd_warp_fits(&a) || (warp && (chunk || nlc || tile)))
            wrong = "the warp kernel must run exactly where it applies, and alone";
        else if ((wide != 0) != (!warp && gpu_bwd_wide_fits(&a)) || (wide && (chunk || nlc || tile)))
            wrong = "the wide kernel must run exactly where it applies and the warp kernel does not, and alone";
        else if (!warp && !wide && ((tile != 0) != (gpu_bwd_tile_chunks(&a) != 0) || (tile && (chunk || nlc))))
            wrong = "the tile kernel must run exactly where it applies and the warp kernel does not, and alone";
        else if (!warp && !wide && !tile && (nlc != 0) != gpu_bwd_nlc_fits(&a))
            wrong = "the nlc kernel must run exactly where it applies and the tile kernel does not";
        else if (nlc && chunk)
            wrong = "the nlc kernel runs alone";
        else if (wide && a.padding_mode == DWCONV_PAD_ZEROS && !a.dstate_out && (a.edge_lo || a.edge_hi))
            wrong = "the wide kernel must take the row ends under zeros padding";
        else if ((a.dstate_in || (a.dstate_out && a.dx)) && !gather)
            wrong = "the gather kernel must take the state gradients";
        else if (a.dstate_in || a.dstate_out)
            ;
        else if ((warp || wide) && a.dx &&
                 (a.edge_lo > std::max<int64_t>(warp_lo, 0) || a.edge_hi > std::max<int64_t>(warp_hi, 0) ||
                  (a.edge_lo + a.edge_hi > 0) != (gather != 0)))
            wrong = "the gather kernel must take exactly the warp or wide kernel's row ends";
        else if ((tile || nlc) && a.dx && (a.edge_lo > edge || a.edge_hi > edge || (edge == 0) != (gather == 0)))
            wrong = "the gather kernel must take exactly the row ends of a padding mode";
        else if (warp || wide || tile || nlc)
            ;
        else if (a.dx && a.ring && (a.edge_lo > edge || a.edge_hi > edge || (edge == 0) != (gather == 0)))
            wrong = "the gather kernel must take exactly the row ends of a padding mode";
        else if (a.dx && !a.ring && (a.edge_lo != L || !gather))
            wrong = "without the ring the gather kernel must take every input";
        else if (!chunk && (a.sums || a.ring))
            wrong = "the chunk kernel did not run";
        if (wrong) {
            snprintf(why, why_size, "%s: %s", gpu_bwd_case_string(c), wrong);
        } else {
            failed = 0;
            for (int s = 0; s < plan.steps && !failed; s++) {
                const gpu_bwd_step *st = &plan.step[s];
                const gpu_bwd_kernel_fn kernel = st->kernel;
                if (gpu_emulate_launch([kernel, a] { kernel(a); }, st->grid, st->threads, st->smem) != 0) {
                    snprintf(why, why_size, "%s: the %s kernel failed in the emulator (above)",
                             gpu_bwd_case_string(c), st->name);
                    failed = 1;
                }
            }
            if (!failed && gpu_bwd_case_compare(c, at, why, why_size) == 0) {
                result = 0;
                for (int o = 0; o < GPU_BWD_OUTPUTS && result == 0; o++) {
                    char what[600];
                    snprintf(what, sizeof what, "%s: output %d", gpu_bwd_case_string(c), o);
                    if (at[o] && gpu_guards_intact(at[o], c->out_bytes[o], GPU_CASE_GUARD,
                                                   GPU_CASE_GUARD, what, why, why_size) != 0)
                        result = -1;
                }
            }
            if (result == 0) {
                seen.cases++;
                seen.warp += warp != 0;
                seen.warp_gather += warp && gather;
                seen.wide += wide != 0;
                seen.wide_gather += wide && gather;
                seen.tile += tile != 0;
                seen.tile_gather += tile && gather;
                seen.nlc += nlc != 0;
                seen.nlc_gather += nlc && gather;
                seen.states += a.dstate_in || a.dstate_out || a.state;
                seen.chunk_dx += chunk && a.dx && a.ring;
                seen.gather_edges += chunk && a.dx && a.ring && gather;
                seen.gather_all += chunk && a.dx && !a.ring;
                seen.sums += a.sums;
            } else {
                const size_t n = strlen(why);
                snprintf(why + n, why_size - n, " [offsets in %d out %d]", shift, oshift);
            }
        }
        free(scratch);
    }
    for (int o = 0; o < GPU_BWD_OUTPUTS; o++) delete out[o];
    return result;
}

/* Runs d (strides of class cls, outputs `wanted`, 0: drawn) at three pointer offsets,
 * with the launch limits of variant i; returns the failures. */
int check_desc(test_rng *rng, const dwconv_desc *d, int cls, int wanted, int i, int *runs,
               bool causal = false) {
    char why[1024];
    gpu_bwd_case c;
    if ((causal ? gpu_bwd_case_make_causal(&c, d, wanted, rng, why, sizeof why)
                : gpu_bwd_case_make(&c, d, cls, wanted, rng, why, sizeof why)) != 0) {
        fprintf(stderr, "FAIL %s\n", why);
        return 1;
    }
    gpu_limits.grid_x = i % 2 ? 2 : GPU_GRID_X; /* blocks walk several items */
    int failures = 0;
    for (int shift = 0; shift < 3; shift++, (*runs)++)
        if (run_case(&c, shift ? 1 : 0, shift == 2 ? 3 : shift, why, sizeof why) != 0) {
            fprintf(stderr, "FAIL %s\n", why);
            failures++;
        }
    gpu_bwd_case_free(&c);
    return failures;
}

/* Shapes that matter: the bench's, each padding mode, rows of several chunks and
 * tiles; and a halo too large for the ring (every dx by the gather kernel). */
int check_shapes(test_rng *rng, int *runs) {
    static const struct {
        int64_t K, stride, dilation, pad; /* pad -1: causal */
    } shapes[] = {{3, 1, 1, 1}, {4, 1, 1, -1}, {3, 2, 1, 1}, {3, 1, 4, 4}, {31, 1, 1, 15},
                  {7, 1, 2, 6}, {5, 3, 2, 4}};
    static const int64_t lengths[] = {1, 7, 64, 129, 700, 1100, 2500, 4200};
    int failures = 0, i = 0;
    for (const auto &s : shapes)
        for (int64_t L : lengths)
            for (int mode = 0; mode < 4; mode++, i++) {
                dwconv_desc d;
                dwconv_desc_init(&d, 1 + i % 2, 2 + i % 3, L, s.K);
                d.stride = s.stride, d.dilation = s.dilation;
                d.dtype = (dwconv_dtype)(i % 3);
                d.weight_dtype = i % 2 ? DWCONV_F32 : d.dtype;
                d.activation = (dwconv_activation)(i / 3 % 3);
                if (s.pad < 0) d.padding = DWCONV_PADDING_CAUSAL;
                else d.pad_left = d.pad_right = s.pad;
                d.padding_mode = (dwconv_padding_mode)mode;
                d.layout = (dwconv_layout)(i / 4 % 2);
                if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
                failures += check_desc(rng, &d, d.layout == DWCONV_LAYOUT_NCL ? GPU_CHANNEL_FIRST
                                                                               : GPU_CHANNEL_LAST,
                                       i % 7 == 0 ? 0 : 7, i, runs);
            }
    /* K 100: a ring of 100 g values a thread does not fit; every mode */
    for (int mode = 0; mode < 4; mode++, i++) {
        dwconv_desc d;
        dwconv_desc_init(&d, 2, 3, 300, 100);
        d.padding = DWCONV_PADDING_SAME, d.padding_mode = (dwconv_padding_mode)mode;
        d.dtype = (dwconv_dtype)(mode % 3), d.activation = DWCONV_ACT_SILU;
        if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
        failures += check_desc(rng, &d, GPU_CASE_ANY_STRIDES, 7, i, runs);
    }
    return failures;
}

/* The staged kernels: warp (channel-first, K <= 8, and its stepped K: stride 2, the
 * dilated) and nlc (channel-last, here with several groups of 32 channels and odd
 * channel counts). Every K, pads below, at and above the span, each padding mode and
 * activation, rows of one partial tile, of several with a short last chunk, and of a
 * last tile of one chunk. */
int check_staged(test_rng *rng, int *runs) {
    static const int64_t lengths[] = {520, 2100, 4160, 4200, 6200};
    int failures = 0;
    for (int i = 0; i < (test_quick() ? 30 : 100); i++) {
        static const int64_t stepped[][3] = {{3, 2, 1}, {3, 1, 2}, {3, 1, 4}, {5, 1, 2}, {7, 1, 2}}; /* K, S, D */
        const bool nlc = i % 2, step = !nlc && i % 6 == 2;
        const int64_t *kind = stepped[i / 6 % 5];
        const int64_t K = step ? kind[0] : 1 + i % 8;
        dwconv_desc d;
        /* (stride 2: twice the length, for as many outputs) */
        const int64_t length = (nlc ? lengths[i % 5] / 8 : lengths[i % 5]) * (step ? kind[1] : 1);
        dwconv_desc_init(&d, 1 + i % 2, nlc ? 33 + i % 40 : 1 + i % 3, length + (step ? i / 6 % 3 : 0), K);
        if (step) d.stride = kind[1], d.dilation = kind[2];
        const int64_t span = (K - 1) * d.dilation;
        d.pad_left = test_rng_range(rng, 0, span + 2), d.pad_right = test_rng_range(rng, 0, span + 2);
        d.padding_mode = (dwconv_padding_mode)(i / 2 % 4);
        d.activation = (dwconv_activation)((i + i / 6) % 3); /* (i % 3 alone: the stepped K all silu) */
        d.dtype = (dwconv_dtype)(i / 3 % 3), d.weight_dtype = i % 4 ? d.dtype : DWCONV_F32;
        d.layout = nlc ? DWCONV_LAYOUT_NLC : DWCONV_LAYOUT_NCL;
        if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
        failures += check_desc(rng, &d, nlc ? GPU_CHANNEL_LAST : GPU_CHANNEL_FIRST, i % 5 == 0 ? 0 : 7, i, runs);
    }
    return failures;
}

/* The wide kernel (channel-first, stride and dilation 1, K above the warp kernel's):
 * K at both ends of its range and between, pads below, at and above the span, each
 * padding mode, activation and dtype, rows of one partial tile, of several with a
 * short last chunk, and of a last tile of one chunk. */
int check_wide(test_rng *rng, int *runs) {
    static const int64_t lengths[] = {520, 2100, 4160, 4200, 6200};
    static const int64_t ks[] = {GPU_BWD_WARP_MAX_K + 1, 15, 31, GPU_BWD_WIDE_MAX_K};
    int failures = 0;
    for (int i = 0; i < (test_quick() ? 12 : 48); i++) {
        const int64_t K = i % 5 == 4 ? test_rng_range(rng, GPU_BWD_WARP_MAX_K + 1, GPU_BWD_WIDE_MAX_K) : ks[i % 5];
        dwconv_desc d;
        dwconv_desc_init(&d, 1 + i % 2, 1 + i % 3, lengths[i % 5] + i / 5 % 3, K);
        d.pad_left = test_rng_range(rng, 0, K + 1), d.pad_right = test_rng_range(rng, 0, K + 1);
        d.padding_mode = (dwconv_padding_mode)(i / 2 % 4);
        d.activation = (dwconv_activation)((i + i / 5) % 3);
        d.dtype = (dwconv_dtype)(i / 3 % 3), d.weight_dtype = i % 4 ? d.dtype : DWCONV_F32;
        if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
        failures += check_desc(rng, &d, GPU_CHANNEL_FIRST, i % 5 == 0 ? 0 : 7, i, runs);
    }
    return failures;
}

/* Geometry at the integer limits, each rejected or run: K 1 allows any dilation (the
 * gather kernel's tap interval once rounded up by adding it), and a padding of 2^62
 * and more put replicate's unbounded ranges past what int64 arithmetic holds. */
int check_extreme_geometry(test_rng *rng, int *runs) {
    static const struct {
        int64_t L, K, dilation, pad_left, pad_right;
    } shapes[] = {{2, 1, INT64_MAX, 1, 1},     {2, 1, INT64_MAX - 1, 1, 1},
                  {2, 1, INT64_MAX - 2, 1, 1}, {1, 1, INT64_MAX, 1, 1},
                  {1, 2, ((int64_t)1 << 62) + 2, ((int64_t)1 << 62) + 1, 1}};
    int failures = 0, i = 0, ran = 0;
    for (const auto &s : shapes)
        for (int mode = 1; mode < 4; mode++, i++) {
            dwconv_desc d;
            dwconv_desc_init(&d, 1, 2, s.L, s.K);
            d.dilation = s.dilation, d.pad_left = s.pad_left, d.pad_right = s.pad_right;
            d.padding_mode = (dwconv_padding_mode)mode;
            /* no activation: g is dy, never zeroed by relu, so a tap lost or doubled shows */
            if (dwconv_desc_resolve(&d, NULL, NULL, NULL) != DWCONV_SUCCESS) continue;
            failures += check_desc(rng, &d, GPU_CHANNEL_FIRST, 0, i, runs);
            ran++;
        }
    if (ran == 0) {
        fprintf(stderr, "FAIL no geometry at the integer limits was accepted\n");
        failures++;
    }
    return failures;
}

} // namespace

int main(void) {
#ifndef GPU_EMULATE_AVAILABLE
    printf("check_gpu_backward_emulated: SKIP: no ucontext.h to run GPU threads on\n");
    return 77;
#endif
    const int cases = test_quick() ? 40 : 200;
    test_rng rng = test_rng_seed(20261202);
    int failures = 0, runs = 0;
    for (int i = 0; i < cases; i++) {
        dwconv_desc d = test_random_desc(&rng, 1500, 9);
        failures += check_desc(&rng, &d, GPU_CASE_ANY_STRIDES, 0, i, &runs);
    }
    failures += check_shapes(&rng, &runs);
    failures += check_staged(&rng, &runs);
    failures += check_wide(&rng, &runs);
    failures += check_extreme_geometry(&rng, &runs);
    /* the causal backward, states given or not, every kernel's layout and length */
    for (int i = 0; i < (test_quick() ? 24 : 96); i++) {
        static const int64_t lengths[] = {1, 3, 70, 700, 2100};
        dwconv_desc d;
        dwconv_desc_init(&d, 1 + i % 3, 1 + i % 7, lengths[i % 5], 1 + test_rng_range(&rng, 0, i % 4 ? 4 : 12));
        d.dilation = i % 3 == 0 ? test_rng_range(&rng, 1, 4) : 1;
        d.padding = DWCONV_PADDING_CAUSAL;
        d.dtype = (dwconv_dtype)(i % 3), d.weight_dtype = i % 2 ? DWCONV_F32 : d.dtype;
        d.activation = (dwconv_activation)(i / 3 % 3), d.layout = (dwconv_layout)(i / 2 % 2);
        failures += check_desc(&rng, &d, GPU_CASE_ANY_STRIDES, 0, i, &runs, true);
    }
    if (!seen.chunk_dx || !seen.gather_edges || !seen.gather_all || !seen.sums || !seen.warp ||
        !seen.warp_gather || !seen.wide || !seen.wide_gather || !seen.tile ||
        !seen.tile_gather || !seen.nlc || !seen.nlc_gather || !seen.states) {
        fprintf(stderr, "FAIL a path was never taken: dx by chunks %d, row ends by gather %d, "
                "every dx by gather %d, sums %d, warp %d (row ends by gather %d), wide %d (row ends by gather %d), "
                "tile %d, tile with row ends by gather %d, nlc %d, nlc with row ends by gather %d, "
                "causal with states %d\n", seen.chunk_dx, seen.gather_edges, seen.gather_all,
                seen.sums, seen.warp, seen.warp_gather, seen.wide, seen.wide_gather, seen.tile, seen.tile_gather, seen.nlc, seen.nlc_gather, seen.states);
        failures++;
    }
    printf("%d of %d emulated backward runs match the reference bit for bit (dx by chunks %d, "
           "row ends by gather %d, every dx by gather %d, sums %d, warp %d (row ends by gather %d), "
           "wide %d (row ends by gather %d), tile %d, tile with row ends by gather %d, nlc %d, nlc with row ends by gather %d, "
           "causal with states %d)\n",
           runs - failures, runs, seen.chunk_dx, seen.gather_edges, seen.gather_all, seen.sums,
           seen.warp, seen.warp_gather, seen.wide, seen.wide_gather, seen.tile, seen.tile_gather, seen.nlc, seen.nlc_gather, seen.states);
    return failures ? 1 : 0;
}
