/* EXPECT for the unit tests: a failed check is printed with its file and
 * line and counted in `failures`, and the test goes on, so that one run
 * shows every problem; main returns non-zero when failures > 0. */
#ifndef GPT2_TESTS_UNIT_EXPECT_H
#define GPT2_TESTS_UNIT_EXPECT_H

#include <stdio.h>

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#endif
