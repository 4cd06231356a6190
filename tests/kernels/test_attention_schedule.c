/* The warp-specialized attention backward's schedule
 * (kernels/cuda/attention_block_order.h) on the CPU, at thousands of shapes
 * and grids: every key block of every (batch, head) pair walked by exactly
 * one block, with its own query tiles; every block of the grid with work,
 * its table's row within the table's bound (two rows, one item and the
 * end, in the deterministic mode's schedule, which the kernel takes as
 * fitting its shared memory), its first item with tiles (the kernel's consumers load its statistics
 * before the loop); the grid within its bound; and the tail, where chosen,
 * ending no later in the model than the pairs alone, and sooner at three
 * GPT-2 shapes on 132 SMs (an H100's and an H200's count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/attention_block_order.h"

static int failures = 0;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (failures++ < 20) {                                                                 \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

enum { BN = 128 };

/* One schedule: every check above but the model's. */
static void check_schedule(int n_bh, int n_kb, int max_grid, int paired, int persistent, int tail) {
    int grid = 0;
    const WsWork wk = ws_schedule(n_bh, n_kb, max_grid, paired, persistent, tail, 16, &grid);
    /* at most a block a unit, or a key block where the tail may split them */
    const int units = n_bh * (paired && !(persistent && tail) ? (n_kb + 1) / 2 : n_kb);
    const char *mode = paired ? (tail ? "paired+tail" : "paired") : "single";
    CHECK(grid >= 1 && grid <= units && (!persistent || grid <= max_grid),
          "%s n_bh %d n_kb %d max_grid %d: grid %d", mode, n_bh, n_kb, max_grid, grid);
    if (grid < 1) return;
    unsigned char *seen = calloc((size_t)n_bh * n_kb, 1);
    const int cap = 2 * n_bh * n_kb + 2; /* more items than that: a walk that does not end */
    for (int b = 0; b < grid; b++) {
        WsItem x;
        int ic = 0;
        for (; ic < cap && ws_item_at(&wk, b, grid, ic, n_kb, BN, &x); ic++) {
            if (ic == 0)
                CHECK(x.n_it > 0, "%s n_bh %d n_kb %d grid %d: block %d starts with no tiles", mode,
                      n_bh, n_kb, grid, b);
            if (!x.n_it) continue; /* the second of a pair that is one key block */
            const int kb = x.k0 / BN;
            if (x.bh < 0 || x.bh >= n_bh || kb < 0 || kb >= n_kb || x.k0 != kb * BN) {
                CHECK(0, "%s n_bh %d n_kb %d grid %d: block %d item %d is (bh %d, k0 %d)", mode,
                      n_bh, n_kb, grid, b, ic, x.bh, x.k0);
                continue;
            }
            CHECK(x.n_it == n_kb - kb, "%s: key block %d of %d has %d query tiles", mode, kb, n_kb,
                  x.n_it);
            CHECK(!seen[(size_t)x.bh * n_kb + kb]++,
                  "%s n_bh %d n_kb %d grid %d: key block (%d, %d) walked twice (block %d)", mode,
                  n_bh, n_kb, grid, x.bh, kb, b);
        }
        CHECK(ic < cap, "%s n_bh %d n_kb %d grid %d: block %d walks on past %d items", mode, n_bh,
              n_kb, grid, b, cap);
        CHECK(ic < wk.rows,
              "%s n_bh %d n_kb %d grid %d: block %d's %d items leave no end row in %d", mode, n_bh,
              n_kb, grid, b, ic, wk.rows);
        CHECK(ic > 0, "%s n_bh %d n_kb %d grid %d: block %d has no work", mode, n_bh, n_kb, grid,
              b);
    }
    if (!paired && !persistent) /* the deterministic mode's */
        CHECK(wk.rows == 2, "single n_bh %d n_kb %d: %d rows a block, not one item and the end",
              n_bh, n_kb, wk.rows);
    CHECK((long)grid * wk.rows <= ws_table_entries(n_bh, n_kb),
          "%s n_bh %d n_kb %d grid %d: %d rows a block outgrow the table's %ld entries", mode, n_bh,
          n_kb, grid, wk.rows, ws_table_entries(n_bh, n_kb));
    for (int i = 0; i < n_bh * n_kb; i++)
        CHECK(seen[i], "%s n_bh %d n_kb %d grid %d: key block (%d, %d) never walked", mode, n_bh,
              n_kb, grid, i / n_kb, i % n_kb);
    free(seen);
}

/* The model's time of the schedule chosen, with the tail and without. */
static void model_times(int n_bh, int n_kb, int max_grid, long *with_tail, long *pairs_only) {
    int grid = 0;
    WsWork wk = ws_schedule(n_bh, n_kb, max_grid, 1, 1, 1, 16, &grid);
    *with_tail = ws_makespan(&wk, grid, n_kb, NULL);
    wk = ws_schedule(n_bh, n_kb, max_grid, 1, 1, 0, 16, &grid);
    *pairs_only = ws_makespan(&wk, grid, n_kb, NULL);
}

int main(void) {
    static const int n_bhs[] = {1, 2, 3, 5, 12, 24, 25, 48, 96, 100, 200, 384, 400, 775, 1536};
    static const int n_kbs[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 32};
    static const int grids[] = {1, 2, 7, 78, 114, 132, 144};
    int schedules = 0, tails = 0;
    for (size_t i = 0; i < sizeof n_bhs / sizeof *n_bhs; i++)
        for (size_t j = 0; j < sizeof n_kbs / sizeof *n_kbs; j++)
            for (size_t g = 0; g < sizeof grids / sizeof *grids; g++) {
                const int n_bh = n_bhs[i], n_kb = n_kbs[j], max_grid = grids[g];
                for (int mode = 0; mode < 5; mode++) {
                    const int paired = mode < 3, persistent = mode != 2 && mode != 4;
                    check_schedule(n_bh, n_kb, max_grid, paired, persistent, mode == 0);
                    schedules++;
                }
                long with_tail, pairs_only;
                model_times(n_bh, n_kb, max_grid, &with_tail, &pairs_only);
                CHECK(with_tail <= pairs_only,
                      "n_bh %d n_kb %d max_grid %d: the tail's model %ld past the pairs' %ld", n_bh,
                      n_kb, max_grid, with_tail, pairs_only);
                tails += with_tail < pairs_only;
            }
    /* 124M (12 heads) at T = 1024, B = 32 and T = 4096, B = 8, where the
     * pairs' last round is 64% full; 1558M (25 heads) at T = 1024, B = 16,
     * where it is 12% full */
    static const struct { int n_bh, n_kb; } shapes[] = {{32 * 12, 8}, {8 * 12, 32}, {16 * 25, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        long with_tail, pairs_only;
        model_times(shapes[s].n_bh, shapes[s].n_kb, 132, &with_tail, &pairs_only);
        printf("n_bh %4d n_kb %2d on 132 SMs: model %ld with the tail, %ld pairs only (%.1f%%)\n",
               shapes[s].n_bh, shapes[s].n_kb, with_tail, pairs_only,
               100.0 * (double)(pairs_only - with_tail) / (double)pairs_only);
        CHECK(with_tail < pairs_only, "n_bh %d n_kb %d: the tail does not end sooner",
              shapes[s].n_bh, shapes[s].n_kb);
    }
    printf("%d schedules checked, the tail chosen at %d shapes of %d\n", schedules, tails,
           schedules / 5);
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
