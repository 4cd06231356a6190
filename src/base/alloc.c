/* Host allocation that ends the process on failure (see alloc.h). */
#include "base/alloc.h"

#include <stdlib.h>

#include "base/fail.h"

void *xgrow(void *p, size_t *cap, size_t need, size_t elem, const char *what) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    p = realloc(p, c * elem);
    if (!p) FAIL("out of memory (%zu x %zu bytes) for %s", c, elem, what);
    *cap = c;
    return p;
}

void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) FAIL("out of host memory allocating %zu bytes", bytes);
    return p;
}

void *xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) FAIL("out of host memory allocating %zu x %zu bytes", count, size);
    return p;
}
