/* ZeRO-1 shard map: rank r owns the contiguous slice [lo[r], hi[r]) of the
 * flat parameter buffer, balanced to within one 128-element unit and
 * aligned to 128 elements, for any rank count. */
#ifndef GPT2_DIST_ZERO_H
#define GPT2_DIST_ZERO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_ALIGN 128

typedef struct {
    int world;
    size_t n_elements;
    size_t *lo, *hi; /* world entries each */
} shard_map;

/* n_elements must be a multiple of ZERO_ALIGN (the layout pads to it). */
void zero_shard_map(shard_map *map, size_t n_elements, int world);
void zero_shard_map_free(shard_map *map);

/* The part of [begin, end) in rank r's shard: [*lo, *hi), empty (*lo ==
 * *hi) where the two do not meet. */
void zero_shard_part(const shard_map *map, int r, size_t begin, size_t end, size_t *lo, size_t *hi);

#ifdef __cplusplus
}
#endif
#endif
