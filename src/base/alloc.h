/* Host allocation that cannot fail quietly: out of memory ends the process
 * with a message naming the size (base/fail.h), so callers never check NULL. */
#ifndef GPT2_BASE_ALLOC_H
#define GPT2_BASE_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes room for need elements of elem bytes in p (capacity *cap, grown by
 * doubling from 1024); ends the process naming what when memory runs out. */
void *xgrow(void *p, size_t *cap, size_t need, size_t elem, const char *what);

/* malloc that cannot return NULL: names the size that failed. */
void *xmalloc(size_t bytes);
void *xcalloc(size_t count, size_t size);

#ifdef __cplusplus
}
#endif
#endif
