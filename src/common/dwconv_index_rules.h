/*
 * The rules for the causal operations' index arrays (cu_seqlens, state_indices,
 * cache_seqlens), written once: the cpu checks them on the host before it writes
 * anything; the GPU module checks them on the device (a call given bad indices writes
 * nothing and records the first violation, which the next synchronize reports). Both
 * describe a violation with the same record and the same words.
 */
#ifndef DWCONV_INDEX_RULES_H
#define DWCONV_INDEX_RULES_H

#include <stdint.h>
#include <stdio.h>

#include "dwconv_numerics.h" /* DWCONV_HD */

typedef enum dwconv_index_error {
    DWCONV_INDEX_OK = 0,
    DWCONV_INDEX_CU_START,        /* cu_seqlens[0] != 0 */
    DWCONV_INDEX_CU_DECREASES,    /* cu_seqlens[at] < cu_seqlens[at - 1] */
    DWCONV_INDEX_CU_END,          /* cu_seqlens[N] != L */
    DWCONV_INDEX_SLOT_OUTSIDE,    /* state_indices[at] >= pool_size */
    DWCONV_INDEX_SLOT_TWICE,      /* state_indices[at] == state_indices[other] >= 0 */
    DWCONV_INDEX_SEQLEN_NEGATIVE  /* cache_seqlens[at] < 0 */
} dwconv_index_error;

/* One violation: which rule, the entry (and the other entry, or the limit), the value. */
typedef struct dwconv_index_violation {
    int32_t code; /* a dwconv_index_error; the first violation found wins */
    int32_t value;
    int64_t at, other;
} dwconv_index_violation;

/* The one-line description of a violation (msg of msg_size bytes). */
static inline void dwconv_index_message(const dwconv_index_violation *v, char *msg,
                                        size_t msg_size) {
    const long long at = (long long)v->at, other = (long long)v->other;
    switch (v->code) {
    case DWCONV_INDEX_CU_START:
        snprintf(msg, msg_size, "cu_seqlens[0] is %d, must be 0", v->value);
        break;
    case DWCONV_INDEX_CU_DECREASES:
        snprintf(msg, msg_size, "cu_seqlens decreases: [%lld] = %d after [%lld] = %lld", at,
                 v->value, at - 1, other);
        break;
    case DWCONV_INDEX_CU_END:
        snprintf(msg, msg_size, "cu_seqlens[%lld] is %d, must be length (%lld)", at, v->value,
                 other);
        break;
    case DWCONV_INDEX_SLOT_OUTSIDE:
        snprintf(msg, msg_size, "state_indices[%lld] is %d, outside the pool of %lld", at,
                 v->value, other);
        break;
    case DWCONV_INDEX_SLOT_TWICE:
        snprintf(msg, msg_size, "state_indices[%lld] and [%lld] are both slot %d", other, at,
                 v->value);
        break;
    case DWCONV_INDEX_SEQLEN_NEGATIVE:
        snprintf(msg, msg_size, "cache_seqlens[%lld] is %d, must be >= 0", at, v->value);
        break;
    default: snprintf(msg, msg_size, "no index violation"); break;
    }
}

/* The single-entry rules (the pairwise one, two slots alike, needs the whole array):
 * entry `at` of an array of n; for cu_seqlens, prev is entry at - 1 (ignored at 0). */
DWCONV_HD dwconv_index_violation dwconv_check_cu_seqlens(const int32_t *cu, int64_t at,
                                                         int64_t n_sequences, int64_t length) {
    dwconv_index_violation v = {DWCONV_INDEX_OK, 0, at, 0};
    if (at == 0 && cu[0] != 0) v.code = DWCONV_INDEX_CU_START, v.value = cu[0];
    else if (at > 0 && cu[at] < cu[at - 1])
        v.code = DWCONV_INDEX_CU_DECREASES, v.value = cu[at], v.other = cu[at - 1];
    else if (at == n_sequences && cu[at] != length)
        v.code = DWCONV_INDEX_CU_END, v.value = cu[at], v.other = length;
    return v;
}

DWCONV_HD dwconv_index_violation dwconv_check_slot(const int32_t *slot, int64_t at,
                                                   int64_t pool_size) {
    dwconv_index_violation v = {DWCONV_INDEX_OK, slot[at], at, pool_size};
    if (slot[at] >= pool_size) v.code = DWCONV_INDEX_SLOT_OUTSIDE;
    return v;
}

DWCONV_HD dwconv_index_violation dwconv_check_seqlen(const int32_t *seen, int64_t at) {
    dwconv_index_violation v = {DWCONV_INDEX_OK, seen[at], at, 0};
    if (seen[at] < 0) v.code = DWCONV_INDEX_SEQLEN_NEGATIVE;
    return v;
}

#endif /* DWCONV_INDEX_RULES_H */
