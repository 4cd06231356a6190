/* ZeRO-1 shard map: for many sizes and rank counts the shards are contiguous,
 * cover the buffer exactly once, start on 128-element boundaries, and differ
 * in size by at most one 128-element unit; and the parts of a range in each
 * shard (zero_shard_part) lie in that shard and in the range and, over the
 * ranks, cover the range exactly once. */
#include <stdbool.h>
#include <stdio.h>

#include "dist/zero.h"

int main(void) {
    const size_t sizes[] = {128, 256, 128 * 7, 3327744, 124475904, 1557686400 + 128 * 5};
    int failures = 0, cases = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int world = 1; world <= 9; world++) {
            shard_map map;
            zero_shard_map(&map, sizes[s], world);
            size_t expect_lo = 0, smallest = (size_t)-1, largest = 0;
            for (int r = 0; r < world; r++) {
                size_t len = map.hi[r] - map.lo[r];
                if (map.lo[r] != expect_lo || map.lo[r] % ZERO_ALIGN || map.hi[r] < map.lo[r]) {
                    printf("n=%zu world=%d rank %d: bad range [%zu, %zu)\n", sizes[s], world, r,
                           map.lo[r], map.hi[r]);
                    failures++;
                }
                expect_lo = map.hi[r];
                if (len < smallest) smallest = len;
                if (len > largest) largest = len;
            }
            if (expect_lo != sizes[s]) {
                printf("n=%zu world=%d: shards end at %zu\n", sizes[s], world, expect_lo);
                failures++;
            }
            if (largest - smallest > ZERO_ALIGN) {
                printf("n=%zu world=%d: shard sizes %zu..%zu are unbalanced\n", sizes[s], world,
                       smallest, largest);
                failures++;
            }
            /* Ranges that start and end inside, on and across shard edges. */
            for (size_t begin = 0; begin < sizes[s]; begin += sizes[s] / 7 + 1) {
                for (size_t len = 0; begin + len <= sizes[s]; len = 2 * len + sizes[s] / 5 + 1) {
                    size_t covered = 0, next = begin;
                    for (int r = 0; r < world; r++) {
                        size_t lo, hi;
                        zero_shard_part(&map, r, begin, begin + len, &lo, &hi);
                        const bool empty = lo == hi;
                        if (hi < lo || (!empty && (lo < map.lo[r] || hi > map.hi[r] || lo != next ||
                                                   hi > begin + len))) {
                            printf("n=%zu world=%d rank %d: part [%zu, %zu) of [%zu, %zu)\n",
                                   sizes[s], world, r, lo, hi, begin, begin + len);
                            failures++;
                        }
                        if (!empty) next = hi;
                        covered += hi - lo;
                    }
                    if (covered != len) {
                        printf("n=%zu world=%d: parts of [%zu, %zu) cover %zu\n", sizes[s], world,
                               begin, begin + len, covered);
                        failures++;
                    }
                }
            }
            zero_shard_map_free(&map);
            cases++;
        }
    }
    printf("%d shard maps checked, %d failures\n", cases, failures);
    return failures ? 1 : 0;
}
