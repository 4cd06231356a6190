/* ZeRO-1 shard ranges (see zero.h). */
#include "dist/zero.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/fail.h"

void zero_shard_map(shard_map *map, size_t n_elements, int world) {
    CHECK(n_elements % ZERO_ALIGN == 0, "buffer of %zu elements is not %d-aligned", n_elements,
          ZERO_ALIGN);
    map->world = world;
    map->n_elements = n_elements;
    map->lo = xcalloc((size_t)world, sizeof(size_t));
    map->hi = xcalloc((size_t)world, sizeof(size_t));
    /* Whole units of ZERO_ALIGN elements, spread as evenly as integers allow. */
    size_t units = n_elements / ZERO_ALIGN;
    for (int r = 0; r < world; r++) {
        map->lo[r] = units * (size_t)r / (size_t)world * ZERO_ALIGN;
        map->hi[r] = units * (size_t)(r + 1) / (size_t)world * ZERO_ALIGN;
    }
}

void zero_shard_map_free(shard_map *map) {
    free(map->lo);
    free(map->hi);
    map->lo = map->hi = NULL;
}

void zero_shard_part(const shard_map *map, int r, size_t begin, size_t end, size_t *lo,
                     size_t *hi) {
    *lo = map->lo[r] > begin ? map->lo[r] : begin;
    *hi = map->hi[r] < end ? map->hi[r] : end;
    if (*hi < *lo) *hi = *lo;
}
