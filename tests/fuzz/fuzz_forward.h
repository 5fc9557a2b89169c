/* The forward fuzz harness (fuzz_forward.c), shared by libFuzzer's driver and by the
 * seed replay that runs in every make check (replay.c). */
#ifndef DWCONV_FUZZ_FORWARD_H
#define DWCONV_FUZZ_FORWARD_H

#include <stddef.h>
#include <stdint.h>

/* One input: a descriptor in text (see fuzz_forward.c). Aborts on a defect: a crash
 * or sanitizer report, a backend that disagrees with the oracle or with validation,
 * an input or a refused call's output that was written. Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the last input came to, for the replay's log: "ignored (not a descriptor)",
 * "refused: <message>", "validated only (too large to compute)" or "computed". */
extern char fuzz_forward_outcome[];

#endif
