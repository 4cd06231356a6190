/* ZeRO-1 shard maps. Even maps: for many sizes and rank counts the shards
 * are contiguous, cover the buffer exactly once, start on 128-element
 * boundaries, and differ in size by at most one 128-element unit; and the
 * parts of a range in each shard (zero_shard_part) lie in that shard and in
 * the range and, over the ranks, cover the range exactly once.
 * Maps along whole tensors, on random tensor lists: they tile the buffer,
 * cut only between tensors or, at 128-element boundaries, inside a tensor
 * that may be split and costs more than a fair share; with no such tensor
 * the largest shard's cost is the least any cut between tensors gives
 * (a dynamic program over every such cut says what that is); with one it
 * is no more than a fair share plus the largest whole tensor; the owner of
 * every element is the rank whose slice holds it. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist/zero.h"

static unsigned long long state = 88172645463325252ull;
static unsigned rnd(unsigned n) { /* xorshift64 */
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (unsigned)(state % n);
}

/* The least largest-shard cost over every way to cut the tensors into world
 * contiguous runs at tensor boundaries (runs may be empty). */
static double best_whole_cut(const shard_tensor *t, int n, int world) {
    double *prefix = calloc((size_t)n + 1, sizeof *prefix);
    for (int i = 0; i < n; i++) prefix[i + 1] = prefix[i] + t[i].cost;
    double *best = calloc((size_t)n + 1, sizeof *best), *next = calloc((size_t)n + 1, sizeof *next);
    for (int i = 0; i <= n; i++) best[i] = prefix[i]; /* one rank: the first i tensors */
    for (int k = 2; k <= world; k++) {
        for (int i = 0; i <= n; i++) {
            next[i] = best[i]; /* rank k empty */
            for (int j = 0; j < i; j++) {
                const double m = fmax(best[j], prefix[i] - prefix[j]);
                if (m < next[i]) next[i] = m;
            }
        }
        double *tmp = best;
        best = next, next = tmp;
    }
    const double r = best[n];
    free(prefix), free(best), free(next);
    return r;
}

/* Random tensors, aligned as the layout aligns them; returns n_elements. */
static size_t random_tensors(shard_tensor *t, int n, bool any_splittable) {
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const size_t numel = 1 + rnd(rnd(4) == 0 ? 40000 : 3000);
        t[i] = (shard_tensor){.offset = at,
                              .numel = numel,
                              .cost = rnd(2) ? (double)numel : 1.0 + rnd(1000),
                              .splittable = any_splittable && rnd(3) == 0};
        at = (at + numel + ZERO_ALIGN - 1) / ZERO_ALIGN * ZERO_ALIGN + ZERO_ALIGN * rnd(2);
    }
    return at;
}

/* The cost of [lo, hi) with costs spread evenly over each tensor's elements. */
static double cost_of(const shard_tensor *t, int n, size_t lo, size_t hi) {
    double c = 0;
    for (int i = 0; i < n; i++) {
        const size_t b = t[i].offset > lo ? t[i].offset : lo;
        const size_t e = t[i].offset + t[i].numel < hi ? t[i].offset + t[i].numel : hi;
        if (e > b) c += t[i].cost * (double)(e - b) / (double)t[i].numel;
    }
    return c;
}

static int check_tensor_maps(void) {
    int failures = 0, cases = 0;
    enum { MAX_T = 24 };
    const int worlds[] = {1, 2, 3, 4, 5, 7, 8, 9, 16};
    for (int trial = 0; trial < 300; trial++) {
        shard_tensor t[MAX_T];
        const int n = 1 + (int)rnd(MAX_T);
        const bool any_splittable = trial % 2 == 1;
        const size_t n_elements = random_tensors(t, n, any_splittable);
        double total = 0, largest = 0;
        for (int i = 0; i < n; i++) total += t[i].cost;
        for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
            const int world = worlds[w];
            const double fair = total / world;
            double largest_whole = 0;
            bool cuttable = false;
            for (int i = 0; i < n; i++) {
                const bool cut = t[i].splittable && t[i].cost > fair;
                cuttable |= cut;
                if (!cut && t[i].cost > largest_whole) largest_whole = t[i].cost;
            }
            largest = 0;
            shard_map map;
            zero_shard_map_tensors(&map, n_elements, world, t, n);
            cases++;
            size_t expect = 0;
            for (int r = 0; r < world; r++) {
                if (map.lo[r] != expect || map.hi[r] < map.lo[r] || map.lo[r] % ZERO_ALIGN) {
                    printf("trial %d world %d rank %d: bad range [%zu, %zu)\n", trial, world, r,
                           map.lo[r], map.hi[r]);
                    failures++;
                }
                expect = map.hi[r];
                largest = fmax(largest, cost_of(t, n, map.lo[r], map.hi[r]));
                /* An edge between tensors, or inside one that may be cut. */
                const size_t e = map.hi[r];
                for (int i = 0; i < n && r + 1 < world; i++)
                    if (e > t[i].offset && e < t[i].offset + t[i].numel &&
                        !(t[i].splittable && t[i].cost > fair)) {
                        printf("trial %d world %d: edge %zu cuts whole tensor %d [%zu, +%zu)\n",
                               trial, world, e, i, t[i].offset, t[i].numel);
                        failures++;
                    }
            }
            if (expect != n_elements) {
                printf("trial %d world %d: shards end at %zu of %zu\n", trial, world, expect,
                       n_elements);
                failures++;
            }
            if (!cuttable) {
                const double best = best_whole_cut(t, n, world);
                if (largest > best * (1 + 1e-6)) {
                    printf("trial %d world %d: largest shard costs %.6g, the best cut %.6g\n",
                           trial, world, largest, best);
                    failures++;
                }
            } else if (largest > fair + largest_whole + 1e-6 * total + t[0].cost * 0) {
                /* a cut tensor's edge lies on a 128-element boundary: allow one unit of each */
                double unit = 0;
                for (int i = 0; i < n; i++)
                    unit = fmax(unit, t[i].cost * ZERO_ALIGN / (double)t[i].numel);
                if (largest > fair + largest_whole + 2 * unit + 1e-6 * total) {
                    printf("trial %d world %d: largest shard costs %.6g > fair %.6g + largest "
                           "whole tensor %.6g\n",
                           trial, world, largest, fair, largest_whole);
                    failures++;
                }
            }
            for (size_t i = 0; i < n_elements; i += 1 + rnd(997)) {
                const int r = zero_shard_owner(&map, i);
                if (i < map.lo[r] || i >= map.hi[r]) {
                    printf("trial %d world %d: owner of %zu is rank %d [%zu, %zu)\n", trial, world,
                           i, r, map.lo[r], map.hi[r]);
                    failures++;
                }
            }
            zero_shard_map_free(&map);
        }
    }
    printf("%d maps along whole tensors checked, %d failures\n", cases, failures);
    return failures;
}

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
    failures += check_tensor_maps();
    return failures ? 1 : 0;
}
