/* What the core and cpu areas' Check binaries (tests/core.inc, tests/cpu.inc) share
 * beyond tests/test_util.h: a cheap assertion for long loops, tcase creation, and
 * main's run-and-exit. */
#ifndef DWCONV_CORE_CHECK_H
#define DWCONV_CORE_CHECK_H

#include <check.h>
#include <stdlib.h>

/* ck_assert records every passing check with a write(2); loops over millions of
 * values use this instead, which costs nothing until it fails. */
#define EXPECT(cond, ...)                                                              \
    do {                                                                               \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);                                        \
    } while (0)

/* A tcase of s: timeout in seconds (0 keeps Check's), setup/teardown a checked
 * fixture (run in each test's process) or NULL. */
static inline TCase *core_tcase(Suite *s, const char *name, double timeout, SFun setup,
                                SFun teardown) {
    TCase *tc = tcase_create(name);
    if (timeout > 0) tcase_set_timeout(tc, timeout);
    if (setup || teardown) tcase_add_checked_fixture(tc, setup, teardown);
    suite_add_tcase(s, tc);
    return tc;
}

/* Runs every test of s; main's exit status. fork_each puts each test in a process of
 * its own whatever CK_FORK says (for tests that change the environment or load
 * modules once per process). */
static inline int core_run(Suite *s, int fork_each) {
    SRunner *sr = srunner_create(s);
    if (fork_each) srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
