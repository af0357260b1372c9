/* The checks of the C tests (test_capi.c, test_progress.c): each CHECK counts
 * a pass or a failure, printing the failed condition and hetero_last_error();
 * the test prints "N passed, N failed" at the end. */
#ifndef HETERO_TESTS_CAPI_CHECK_H
#define HETERO_TESTS_CAPI_CHECK_H

#include <stdio.h>

#include "hetero/hetero.h"

static int passed, failed;

#define CHECK(cond)                                                                                      \
  do {                                                                                                   \
    if (cond) {                                                                                          \
      ++passed;                                                                                          \
    } else {                                                                                             \
      ++failed;                                                                                          \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n  last error: %s\n", __FILE__, __LINE__, #cond,          \
              hetero_last_error());                                                                      \
    }                                                                                                    \
  } while (0)
#define CHECK_OK(call) CHECK((call) == HETERO_OK)
#define CHECK_STATUS(call, status) CHECK((call) == (status))

#endif
