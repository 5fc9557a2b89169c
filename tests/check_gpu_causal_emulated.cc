/*
 * The GPU module's causal operations (src/cuda/gpu_causal_plan.cuh and the
 * gpu_kernel_causal_*.cuh kernels), run on the CPU by tests/gpu_emulate.h, against the
 * oracle (src/reference/causal.c) bit for bit: the same steps the module launches, in
 * the same order, over random causal forwards (no states, final states only, initial
 * states, both, in place; cu_seqlens with empty sequences, with and without states;
 * seq_idx) and decodes (shift register and circular, with and without a pool of
 * slots, padding entries, several tokens, state_length past the span, a batch past
 * the in-block check), every dtype, weight dtype, layout, activation, K, dilation.
 * Every output and state has poisoned guard bytes before and after it, compared too;
 * inputs end at inaccessible pages. Bad index arrays (cu_seqlens not starting at 0,
 * decreasing, not ending at L; a slot past the pool; a slot twice; a negative
 * cache_seqlens) must write nothing and record the violation the oracle names.
 * Exit status: 0 pass, 1 fail, 77 skip (no ucontext.h). DWCONV_TEST_QUICK=1 runs fewer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "gpu_cases.h"
extern "C" {
#include "internal.h"
#include "reference.h"
}
#include "gpu_emulate.h"
#include "gpu_kernels.cuh"
#include "gpu_causal_plan.cuh"

namespace {

const size_t guard = GPU_CASE_GUARD;
int fused[GPU_FAMILY_COUNT]; /* forwards whose family took the states itself */
int fused_whole;              /* of lean's, those in whole-warp tiles (rows of 64+ vectors) */
int windowed;                /* decodes that ran the window body (K 2..4, dilation 1) */
int quadded;                 /* of them, the window's quad instance */

/* Inputs have no guard bytes (0), outputs and states `guard` poisoned ones each side. */
using buffer = gpu_emulate_buffer;

/* 0 when a's region equals b's (two buffers of one shape); else -1 and why. */
int same(const buffer &a, const buffer &b, const char *what, char *why, size_t why_size) {
    for (size_t i = 0; i < a.region_bytes(); i++)
        if (a.region()[i] != b.region()[i]) {
            const long long at = (long long)i - (long long)a.guard;
            snprintf(why, why_size, "%s differs at byte %lld of %zu%s (got 0x%02x, oracle 0x%02x)",
                     what, at, a.bytes, at < 0 || at >= (long long)a.bytes ? " (a guard)" : "",
                     a.region()[i], b.region()[i]);
            return -1;
        }
    return 0;
}

/* Runs the module's steps for p on the emulator; 0, or -1 with why. */
int run_steps(const dwconv_problem *p, dwconv_index_violation *violation, int forced, char *why,
              size_t why_size) {
    int verdict = 0x5a5a5a5a; /* whatever a previous call left there */
    gpu_causal_plan plan;
    gpu_causal_plan_make(p, violation, &verdict, forced, &plan);
    for (int i = 0; i < plan.steps; i++) {
        const gpu_causal_step &s = plan.step[i];
        int rc = 0;
        const char *name = s.name;
        if (s.kind == GPU_STEP_CLEAR_VERDICT) {
            verdict = 0;
        } else if (s.kind == GPU_STEP_FAMILY) {
            if (s.conv.state_in || s.conv.state_out) {
                fused[s.launch.family]++;
                if (s.launch.family == GPU_FAMILY_LEAN && s.conv.row_threads == GPU_WARP) fused_whole++;
            }
            rc = s.family_kernel ? gpu_emulate(s.family_kernel, s.launch.grid, s.launch.threads,
                                               s.launch.smem, s.conv)
                                 : -1;
        } else {
            const bool quads = strcmp(name, GPU_UPDATE_QUADS_NAME) == 0;
            if (quads || strcmp(name, GPU_UPDATE_WINDOW_NAME) == 0) windowed++;
            if (quads) quadded++;
            const gpu_causal_kernel_fn kernel = s.kernel;
            const gpu_causal_args args = s.args;
            rc = gpu_emulate_launch([kernel, args] { kernel(args); }, s.grid, s.threads, s.smem);
        }
        if (rc != 0) {
            snprintf(why, why_size, "step %d (%s) failed in the emulator (above)", i, name);
            return -1;
        }
    }
    return 0;
}

/* The tiny launch limits of every other case: blocks then walk rows and sequences. */
void set_limits(int i) {
    gpu_limits.enough_blocks = i % 2 ? 1 : 2048;
    gpu_limits.enough_threads = i % 2 ? 1 : (int64_t)1 << 19;
    gpu_limits.grid_yz = i % 4 == 1 ? 2 : 65535;
    gpu_limits.grid_x = i % 4 == 3 ? 2 : GPU_GRID_X;
}

dwconv_desc random_causal_desc(test_rng *rng, int64_t B, int64_t C, int64_t L) {
    static const int64_t ks[] = {1, 2, 3, 4, 4, 4, 5, 7, 9, 17};
    dwconv_desc d;
    dwconv_desc_init(&d, B, C, L, ks[test_rng_range(rng, 0, 9)]);
    d.padding = DWCONV_PADDING_CAUSAL;
    d.dilation = test_rng_range(rng, 0, 2) ? 1 : test_rng_range(rng, 2, 4);
    d.dtype = (dwconv_dtype)test_rng_range(rng, 0, 2);
    d.weight_dtype = test_rng_range(rng, 0, 1) ? DWCONV_F32 : d.dtype;
    d.activation = (dwconv_activation)test_rng_range(rng, 0, 2);
    d.layout = test_rng_range(rng, 0, 1) ? DWCONV_LAYOUT_NLC : DWCONV_LAYOUT_NCL;
    return d;
}

/* The violation record against the oracle's message (NULL: none expected). */
int check_record(const dwconv_index_violation *v, const char *expected, char *why,
                 size_t why_size) {
    if (!expected) {
        if (v->code == DWCONV_INDEX_OK) return 0;
        char got[DWCONV_MSG_SIZE];
        dwconv_index_message(v, got, sizeof got);
        snprintf(why, why_size, "a clean call recorded a violation: %s", got);
        return -1;
    }
    char got[DWCONV_MSG_SIZE];
    dwconv_index_message(v, got, sizeof got);
    if (v->code != DWCONV_INDEX_OK && strcmp(got, expected) == 0) return 0;
    snprintf(why, why_size, "recorded '%s', the oracle says '%s'",
             v->code ? got : "nothing", expected);
    return -1;
}

/* Forward modes. */
enum { PLAIN, FINAL_ONLY, INITIAL_ONLY, BOTH, IN_PLACE, CU_PLAIN, CU_STATES, CU_IN_PLACE, SEQ_IDX, MODES };
const char *const mode_names[] = {"no states", "final states", "initial states", "both states",
                                  "states in place", "cu_seqlens", "cu_seqlens with states",
                                  "cu_seqlens in place", "seq_idx"};

/* Bad cu_seqlens kinds (0: good). */
enum { CU_GOOD, CU_BAD_START, CU_BAD_ORDER, CU_BAD_END };

int check_forward(test_rng *rng, int i, int bad, char *why, size_t why_size) {
    const int mode = bad ? (int)test_rng_range(rng, CU_PLAIN, CU_IN_PLACE) : i % MODES;
    const bool cu = mode >= CU_PLAIN && mode <= CU_IN_PLACE;
    const int64_t B = cu ? 1 : test_rng_range(rng, 1, 3);
    int64_t L = test_rng_range(rng, 1, i % 5 == 0 ? 700 : 90);
    dwconv_desc d = random_causal_desc(rng, B, test_rng_range(rng, 1, i % 3 ? 9 : 70), L);
    /* the channel-first cases with both states (every eighteenth or so): lean's
     * whole-warp tiles, which random short rows rarely reach: rows of 602 to 2000
     * outputs (several tiles in 16-bit), K 2-4, every activation in turn */
    if (mode == BOTH && d.layout == DWCONV_LAYOUT_NCL) {
        d.length = L = 600 + 2 * L;
        d.dilation = 1, d.kernel_size = 2 + (i / MODES) % 3;
        d.activation = (dwconv_activation)(i / (3 * MODES) % 3);
    }
    if (i % 2) d.channels = (d.channels + 7) / 8 * 8; /* channel-last rows on 16 bytes */
    if (i % 6 == 1) /* rows shorter than the state: final states keep part of it */
        d.length = L = test_rng_range(rng, 1, gpu_max64(1, d.dilation * (d.kernel_size - 1)));
    const int64_t N = cu ? test_rng_range(rng, 1, 7) : B;
    const int64_t K = d.kernel_size, C = d.channels, S = d.dilation * (K - 1);
    const size_t xs = dwconv_dtype_size(d.dtype), ws = dwconv_dtype_size(d.weight_dtype);
    const int shift = i % 2 ? 0 : (int)test_rng_range(rng, 0, 3);
    buffer x(B * C * L * xs, shift * xs, 0), w(C * K * ws, 0, 0), bias(C * ws, 0, 0);
    test_fill_random(rng, d.dtype, x.at, B * C * L);
    test_fill_random(rng, d.weight_dtype, w.at, C * K);
    test_fill_random(rng, d.weight_dtype, bias.at, C);
    const bool with_bias = test_rng_range(rng, 0, 2) != 0;
    /* offsets: random cut points, repeats (empty sequences) included */
    std::vector<int32_t> offsets;
    if (cu) {
        offsets.push_back(0);
        for (int64_t n = 1; n < N; n++) offsets.push_back((int32_t)test_rng_range(rng, 0, L));
        offsets.push_back((int32_t)L);
        std::sort(offsets.begin(), offsets.end());
        if (test_rng_range(rng, 0, 3) == 0 && N > 1) offsets[1] = 0; /* an empty first one */
        if (bad == CU_BAD_START) offsets[0] = (int32_t)test_rng_range(rng, 1, 3);
        if (bad == CU_BAD_END) offsets[N] = (int32_t)(L + test_rng_range(rng, -1, 1) * 2 + 1);
        if (bad == CU_BAD_ORDER) {
            const int64_t n = test_rng_range(rng, 1, N);
            offsets[n] = offsets[n - 1] - (int32_t)test_rng_range(rng, 1, 3);
        }
    }
    buffer cu_buf(offsets.size() * 4, 0, 0);
    if (cu) memcpy(cu_buf.at, offsets.data(), offsets.size() * 4);
    std::vector<int32_t> ids;
    if (mode == SEQ_IDX) {
        for (int64_t b = 0, id = 0; b < B; b++)
            for (int64_t l = 0; l < L; l++) {
                if (test_rng_range(rng, 0, 9) == 0) id++;
                ids.push_back((int32_t)id);
            }
    }
    buffer idx_buf(ids.size() * 4, 0, 0);
    if (!ids.empty()) memcpy(idx_buf.at, ids.data(), ids.size() * 4);

    const bool want_in = mode == INITIAL_ONLY || mode == BOTH || mode == IN_PLACE ||
                         mode == CU_STATES || mode == CU_IN_PLACE;
    const bool want_out = mode == FINAL_ONLY || mode == BOTH || mode == IN_PLACE ||
                          mode == CU_STATES || mode == CU_IN_PLACE;
    const bool in_place = mode == IN_PLACE || mode == CU_IN_PLACE;
    const size_t state_bytes = (size_t)(N * C * S) * xs;
    /* x and y alike (both aligned: slide) or apart */
    buffer y(B * C * L * xs, (i % 2 ? shift : shift + 1) % 4 * xs, guard), y_ref(y.bytes, 0, guard);
    buffer in(state_bytes, 0, in_place ? guard : 0), out(state_bytes, 0, guard);
    buffer out_ref(state_bytes, 0, guard);
    buffer in_ref(state_bytes, 0, guard); /* the oracle's in-place states */
    if (want_in) {
        test_fill_random(rng, d.dtype, in.at, N * C * S);
        memcpy(in_ref.at, in.at, state_bytes);
    }
    void *in_ptr = !want_in ? NULL : in_place ? (void *)in.at : (void *)in.at;
    void *out_ptr = !want_out ? NULL : in_place ? (void *)in.at : (void *)out.at;
    void *in_ref_ptr = !want_in ? NULL : in_place ? (void *)in_ref.at : (void *)in.at;
    void *out_ref_ptr = !want_out ? NULL : in_place ? (void *)in_ref.at : (void *)out_ref.at;

    dwconv_problem p, q;
    const int32_t *cu_ptr = cu ? (const int32_t *)cu_buf.at : NULL;
    const int32_t *id_ptr = mode == SEQ_IDX ? (const int32_t *)idx_buf.at : NULL;
    const void *bias_ptr = with_bias ? bias.at : NULL;
    if (dwconv_validate_causal_forward(&p, &d, x.at, w.at, bias_ptr, cu_ptr, id_ptr, cu ? N : 0,
                                       in_ptr, out_ptr, y.at, "test") ||
        dwconv_validate_causal_forward(&q, &d, x.at, w.at, bias_ptr, cu_ptr, id_ptr, cu ? N : 0,
                                       in_ref_ptr, out_ref_ptr, y_ref.at, "test")) {
        snprintf(why, why_size, "%s: the core refused: %s", test_desc_string(&d), dwconv_last_error());
        return -1;
    }
    char expected[DWCONV_MSG_SIZE];
    const dwconv_status ref = dwconv_ref_causal_forward(&q, expected);
    if ((ref != DWCONV_SUCCESS) != (bad != CU_GOOD)) {
        snprintf(why, why_size, "the oracle says %d for a %s case: %s", (int)ref,
                 bad ? "bad" : "good", ref ? expected : "");
        return -1;
    }
    set_limits(i);
    dwconv_index_violation record = {0, 0, 0, 0};
    /* one case in three through the generic family: the states then take the outputs
     * and final states kernels; one in three through slide where it applies (the other
     * family that takes states), so that it runs often whatever the draws */
    const int forced = i % 3 == 2 ? GPU_FAMILY_GENERIC : i % 3 == 1 ? GPU_FAMILY_SLIDE : GPU_FAMILY_AUTO;
    int rc = run_steps(&p, &record, forced, why, why_size);
    if (rc == 0) rc = check_record(&record, ref ? expected : NULL, why, why_size);
    if (rc == 0) rc = same(y, y_ref, "y", why, why_size);
    if (rc == 0 && in_place) rc = same(in, in_ref, "states (in place)", why, why_size);
    if (rc == 0 && !in_place) rc = same(out, out_ref, "final states", why, why_size);
    if (rc == 0) return 0;
    const size_t n = strlen(why);
    snprintf(why + n, why_size - n, " [forward, %s%s, %s, N %lld, S %lld, case %d]",
             mode_names[mode], bad ? " (bad offsets)" : "", test_desc_string(&d), (long long)N,
             (long long)S, i);
    return -1;
}

/* Bad decode index kinds (0: good). */
enum { SLOT_GOOD, SLOT_OUTSIDE, SLOT_TWICE, SEQLEN_NEGATIVE };

int check_update(test_rng *rng, int i, int bad, char *why, size_t why_size) {
    const bool wide = i % 11 == 5; /* past the in-block check: the check kernel */
    const bool full = i % 11 == 8;  /* the in-block check with few threads per sequence */
    const int64_t B = wide   ? test_rng_range(rng, GPU_UPDATE_BLOCK_CHECK + 1, 200)
                      : full ? test_rng_range(rng, 40, GPU_UPDATE_BLOCK_CHECK)
                             : test_rng_range(rng, 1, 6);
    /* the window's quads: channel-first rows of 4 or 8 tokens on vector boundaries */
    const bool quads = i % 8 == 4;
    const int64_t T = quads ? 4 * test_rng_range(rng, 1, 2)
                            : test_rng_range(rng, 1, i % 4 == 0 ? 9 : 2); /* up to 9: tokens past a state's wrap */
    dwconv_desc d = random_causal_desc(rng, B, test_rng_range(rng, 1, wide || full ? 3 : i % 3 ? 9 : 300), T);
    if (quads) d.layout = DWCONV_LAYOUT_NCL, d.dilation = 1, d.kernel_size = test_rng_range(rng, 2, 4);
    const int64_t K = d.kernel_size, C = d.channels, span = d.dilation * (K - 1);
    const int64_t P = span + (test_rng_range(rng, 0, 1) ? 0 : test_rng_range(rng, 1, 3));
    const bool pooled = bad == SLOT_OUTSIDE || bad == SLOT_TWICE || test_rng_range(rng, 0, 1);
    const bool circular = bad == SEQLEN_NEGATIVE || test_rng_range(rng, 0, 1);
    const int64_t pool = pooled ? B * test_rng_range(rng, 1, 4) + test_rng_range(rng, 0, 2)
                                : B + test_rng_range(rng, 0, 2);
    const size_t xs = dwconv_dtype_size(d.dtype), ws = dwconv_dtype_size(d.weight_dtype);
    buffer x(B * C * T * xs, quads ? 0 : test_rng_range(rng, 0, 3) * xs, 0), w(C * K * ws, 0, 0),
        bias(C * ws, 0, 0);
    test_fill_random(rng, d.dtype, x.at, B * C * T);
    test_fill_random(rng, d.weight_dtype, w.at, C * K);
    test_fill_random(rng, d.weight_dtype, bias.at, C);
    const bool with_bias = test_rng_range(rng, 0, 2) != 0;
    /* distinct slots in random order, some entries padding (-1) */
    std::vector<int32_t> slots(pool);
    for (int64_t s = 0; s < pool; s++) slots[s] = (int32_t)s;
    for (int64_t s = pool - 1; s > 0; s--) std::swap(slots[s], slots[test_rng_range(rng, 0, s)]);
    slots.resize(B);
    for (int64_t b = 0; b < B; b++)
        if (test_rng_range(rng, 0, 5) == 0) slots[b] = -1 - (int32_t)test_rng_range(rng, 0, 2);
    std::vector<int32_t> seen(B);
    for (int64_t b = 0; b < B; b++) seen[b] = (int32_t)test_rng_range(rng, 0, 3 * P + 5);
    if (bad == SLOT_OUTSIDE) slots[test_rng_range(rng, 0, B - 1)] = (int32_t)(pool + test_rng_range(rng, 0, 2));
    if (bad == SLOT_TWICE) {
        if (B == 1) return 0; /* no pair to make */
        const int64_t a = test_rng_range(rng, 0, B - 2), e = test_rng_range(rng, a + 1, B - 1);
        slots[e] = slots[a] = (int32_t)test_rng_range(rng, 0, pool - 1);
    }
    if (bad == SEQLEN_NEGATIVE) seen[test_rng_range(rng, 0, B - 1)] = -(int32_t)test_rng_range(rng, 1, 5);
    buffer slot_buf(B * 4, 0, 0), seen_buf(B * 4, 0, 0);
    memcpy(slot_buf.at, slots.data(), B * 4);
    memcpy(seen_buf.at, seen.data(), B * 4);
    const size_t pool_bytes = (size_t)(pool * C * P) * xs;
    buffer state(pool_bytes, 0, guard), state_ref(pool_bytes, 0, guard);
    test_fill_random(rng, d.dtype, state.at, pool * C * P);
    memcpy(state_ref.at, state.at, pool_bytes);
    buffer y(B * C * T * xs, quads ? 0 : test_rng_range(rng, 0, 3) * xs, guard), y_ref(y.bytes, 0, guard);
    void *state_ptr = P == 0 && test_rng_range(rng, 0, 1) ? NULL : state.at;
    void *state_ref_ptr = state_ptr ? state_ref.at : NULL;

    dwconv_problem p, q;
    const int32_t *slot_ptr = pooled ? (const int32_t *)slot_buf.at : NULL;
    const int32_t *seen_ptr = circular ? (const int32_t *)seen_buf.at : NULL;
    const void *bias_ptr = with_bias ? bias.at : NULL;
    if (dwconv_validate_causal_update(&p, &d, x.at, state_ptr, pool, P, w.at, bias_ptr, seen_ptr,
                                      slot_ptr, y.at, "test") ||
        dwconv_validate_causal_update(&q, &d, x.at, state_ref_ptr, pool, P, w.at, bias_ptr,
                                      seen_ptr, slot_ptr, y_ref.at, "test")) {
        snprintf(why, why_size, "%s: the core refused: %s", test_desc_string(&d), dwconv_last_error());
        return -1;
    }
    char expected[DWCONV_MSG_SIZE];
    const dwconv_status ref = dwconv_ref_causal_update(&q, expected);
    if ((ref != DWCONV_SUCCESS) != (bad != SLOT_GOOD)) {
        snprintf(why, why_size, "the oracle says %d for a %s case: %s", (int)ref,
                 bad ? "bad" : "good", ref ? expected : "");
        return -1;
    }
    set_limits(i);
    dwconv_index_violation record = {0, 0, 0, 0};
    int rc = run_steps(&p, &record, GPU_FAMILY_AUTO, why, why_size);
    if (rc == 0) rc = check_record(&record, ref ? expected : NULL, why, why_size);
    if (rc == 0) rc = same(y, y_ref, "y", why, why_size);
    if (rc == 0) rc = same(state, state_ref, "the state pool", why, why_size);
    if (rc == 0) return 0;
    const size_t n = strlen(why);
    snprintf(why + n, why_size - n, " [decode, %s, %s, %s, pool %lld, state_length %lld, T %lld, "
             "bad %d, case %d]", circular ? "circular" : "shift register",
             pooled ? "state_indices" : "slot b", test_desc_string(&d), (long long)pool,
             (long long)P, (long long)T, bad, i);
    return -1;
}

} // namespace

int main(void) {
#ifndef GPU_EMULATE_AVAILABLE
    printf("check_gpu_causal_emulated: SKIP: no ucontext.h to run GPU threads on\n");
    return 77;
#endif
    const int cases = test_quick() ? 60 : 360;
    /* one stream per operation: a change to the decode's draws leaves the forward's */
    test_rng rng = test_rng_seed(20261213), decode_rng = test_rng_seed(20261202);
    char why[2048];
    int failures = 0, runs = 0;
    for (int i = 0; i < cases; i++, runs += 2) {
        if (check_forward(&rng, i, CU_GOOD, why, sizeof why)) fprintf(stderr, "FAIL %s\n", why), failures++;
        if (check_update(&decode_rng, i, SLOT_GOOD, why, sizeof why)) fprintf(stderr, "FAIL %s\n", why), failures++;
    }
    for (int i = 0; i < cases / 4; i++, runs += 2) {
        if (check_forward(&rng, i, CU_BAD_START + i % 3, why, sizeof why))
            fprintf(stderr, "FAIL %s\n", why), failures++;
        if (check_update(&decode_rng, i, SLOT_OUTSIDE + i % 3, why, sizeof why))
            fprintf(stderr, "FAIL %s\n", why), failures++;
    }
    /* the families that take states and the decode's window must have run (the quick
     * suite draws a sixth of the cases) */
    const int least = test_quick() ? 2 : 10;
    for (int f : {GPU_FAMILY_LEAN, GPU_FAMILY_SLIDE})
        if (fused[f] < least) {
            fprintf(stderr, "FAIL the %s family took the states in only %d forwards\n",
                    gpu_family(f)->name, fused[f]);
            failures++;
        }
    if (fused_whole < least) {
        fprintf(stderr, "FAIL lean took the states in whole-warp tiles in only %d forwards\n", fused_whole);
        failures++;
    }
    if (windowed < least) {
        fprintf(stderr, "FAIL the decode's window body ran in only %d decodes\n", windowed);
        failures++;
    }
    if (quadded < least) {
        fprintf(stderr, "FAIL the window's quad instance ran in only %d decodes\n", quadded);
        failures++;
    }
    printf("%d of %d emulated causal runs match the oracle bit for bit (outputs, states, "
           "guards, violation records); states taken by lean %d (%d in whole-warp tiles), slide %d "
           "times; %d decodes by the window body (%d in quads)\n",
           runs - failures, runs, fused[GPU_FAMILY_LEAN], fused_whole, fused[GPU_FAMILY_SLIDE], windowed,
           quadded);
    return failures ? 1 : 0;
}
