/* ZeRO-1 shard map: for many sizes and rank counts the shards are contiguous,
 * cover the buffer exactly once, start on 128-element boundaries, and differ
 * in size by at most one 128-element unit. */
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
            zero_shard_map_free(&map);
            cases++;
        }
    }
    printf("%d shard maps checked, %d failures\n", cases, failures);
    return failures ? 1 : 0;
}
