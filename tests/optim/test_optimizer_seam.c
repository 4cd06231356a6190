/* The optimizer seam on the CPU backend.
 *  - Shard maps of AdamW for GPT-2's layouts (tiny, 124M, 350M, 774M,
 *    1558M) at 1 to 9, 12, 16, 32 and 64 ranks: they tile the buffer with
 *    no empty shard, and a
 *    tensor lies on two ranks only where it is larger than a fair share (the
 *    parameters over the ranks): every 2-D weight smaller than that on
 *    exactly one. The same check finds the even map's split weights (so it
 *    can fail). The largest shard stays within a fair share plus the
 *    largest whole tensor; the balance at 2, 4, 8 and 64 ranks is printed.
 *  - AdamW's arrays by name (master, m, v), its state bytes, the kinds by
 *    name.
 *  - An optimizer made through the seam on a shard of the tiny layout: its
 *    master is the shard's slice, m and v start at zero, and two steps give
 *    bit for bit what adamw_update_cpu gives for each tensor (weight decay
 *    on 2-D tensors only); a step with the skip factor changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kernels/norm.h"
#include "optim/optimizer.h"

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

typedef struct {
    const char *name;
    int n_layer, n_embd, n_head, block_size;
} model_size;

static const model_size SIZES[] = {{"tiny", 2, 64, 1, 128},
                                   {"124M", 12, 768, 12, 1024},
                                   {"350M", 24, 1024, 16, 1024},
                                   {"774M", 36, 1280, 20, 1024},
                                   {"1558M", 48, 1600, 25, 1024}};

/* Tensors of lay on more than one rank of map although no larger than a
 * fair share (2-D ones counted in two_d); prints the first few. */
static int split_small_tensors(const gpt2_layout *lay, const shard_map *map, int *two_d,
                               const char *label) {
    const double fair = (double)lay->n_params / map->world;
    int bad = 0;
    *two_d = 0;
    for (int i = 0; i < lay->n_tensors; i++) {
        const param_tensor *t = &lay->tensors[i];
        const int first = zero_shard_owner(map, t->offset);
        const int last = zero_shard_owner(map, t->offset + t->numel - 1);
        if (first == last || (double)t->numel > fair) continue;
        if (bad++ < 3 && label)
            printf("%s: %s (%zu elements, a fair share is %.0f) lies on ranks %d-%d\n", label,
                   t->name, t->numel, fair, first, last);
        if (t->ndim == 2) ++*two_d;
    }
    return bad;
}

static void check_shard_maps(void) {
    const int worlds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 32, 64};
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
        const model_size *z = &SIZES[s];
        gpt2_layout lay;
        layout_build(&lay, z->n_layer, z->n_embd, z->n_head, 50257, 50304, z->block_size);
        size_t largest_tensor = 0;
        for (int i = 0; i < lay.n_tensors; i++)
            if (lay.tensors[i].numel > largest_tensor && lay.tensors[i].offset != lay.wte)
                largest_tensor = lay.tensors[i].numel;
        for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
            const int world = worlds[w];
            char label[64], what[160];
            snprintf(label, sizeof label, "%s on %d ranks", z->name, world);
            shard_map map;
            optimizer_shard_map(&optimizer_adamw, &lay, world, &map);
            size_t next = 0, largest = 0;
            for (int r = 0; r < world; r++) {
                snprintf(what, sizeof what, "%s: rank %d's slice [%zu, %zu) tiles on, not empty",
                         label, r, map.lo[r], map.hi[r]);
                check(map.lo[r] == next && map.hi[r] > map.lo[r] && map.lo[r] % ZERO_ALIGN == 0,
                      what);
                next = map.hi[r];
                if (map.hi[r] - map.lo[r] > largest) largest = map.hi[r] - map.lo[r];
            }
            snprintf(what, sizeof what, "%s: the slices end at the buffer's end", label);
            check(next == lay.n_elements, what);
            int two_d = 0;
            const int bad = split_small_tensors(&lay, &map, &two_d, label);
            snprintf(what, sizeof what,
                     "%s: %d tensors (%d of them 2-D) no larger than a fair "
                     "share lie on two ranks",
                     label, bad, two_d);
            check(bad == 0, what);
            /* An element-wise optimizer's map: within a fair share plus the
             * largest whole tensor (and one 128-element unit per edge). */
            const double fair = (double)lay.n_params / world;
            snprintf(what, sizeof what,
                     "%s: largest shard %zu > fair share %.0f + largest whole "
                     "tensor %zu",
                     label, largest, fair, largest_tensor);
            check((double)largest <= fair + (double)largest_tensor + 2 * ZERO_ALIGN, what);
            if (s >= 1 && s != 3 && (world == 2 || world == 4 || world == 8 || world == 64))
                printf("balance %s: largest shard %zu elements, %.3fx the mean\n", label, largest,
                       (double)largest / ((double)lay.n_elements / world));
            zero_shard_map_free(&map);
        }
        layout_free(&lay);
    }
    /* The check itself can fail: even slices cut 124M's weights anywhere. */
    gpt2_layout lay;
    layout_build(&lay, 12, 768, 12, 50257, 50304, 1024);
    shard_map even;
    zero_shard_map(&even, lay.n_elements, 3);
    int two_d = 0;
    const int bad = split_small_tensors(&lay, &even, &two_d, NULL);
    printf(
        "the even map of 124M on 3 ranks splits %d small tensors (%d 2-D): the check sees them\n",
        bad, two_d);
    check(bad > 0 && two_d > 0, "the even map's split weights are found");
    zero_shard_map_free(&even);
    layout_free(&lay);
}

static void check_kinds(void) {
    const optimizer_kind *k = &optimizer_adamw;
    check(optimizer_kind_named("adamw") == k, "adamw by name");
    check(optimizer_kind_named("sgd") == NULL, "no optimizer named sgd");
    check(optimizer_n_arrays(k) == 3, "AdamW keeps three arrays");
    check(strcmp(optimizer_array_name(k, 0), "master") == 0 &&
              strcmp(optimizer_array_name(k, 1), "m") == 0 &&
              strcmp(optimizer_array_name(k, 2), "v") == 0,
          "AdamW's arrays are master, m, v (the names of checkpoints before the seam)");
    gpt2_layout lay;
    layout_build(&lay, 2, 64, 1, 50257, 50304, 128);
    check(optimizer_state_bytes(k, &lay, 1280, 4096, 4) == 12 * (4096 - 1280),
          "AdamW keeps 12 bytes per element");
    layout_free(&lay);
}

/* Two AdamW steps through the seam against the kernel per tensor. */
static void check_steps(void) {
    gpt2_layout lay;
    layout_build(&lay, 2, 64, 1, 50257, 50304, 128);
    const kernel_ops *ops = &ops_cpu;
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.beta1 = 0.9, cfg.beta2 = 0.95, cfg.eps = 1e-8, cfg.weight_decay = 0.1;
    /* A shard from inside block 1 to inside wte (a split start and end). */
    const size_t lo = lay.blocks[1].begin + 128, hi = lay.wte + 4096, n = hi - lo;
    float *host = xmalloc(lay.n_elements * sizeof(float));
    for (size_t i = 0; i < lay.n_elements; i++)
        host[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    optimizer *opt = optimizer_create(&optimizer_adamw, &cfg, &lay, ops, lo, hi, host);
    check(memcmp(opt->master, host + lo, n * sizeof(float)) == 0, "master = the shard's slice");
    int zero = 1;
    for (size_t i = 0; i < n; i++) zero &= opt->state[0][i] == 0.0f && opt->state[1][i] == 0.0f;
    check(zero, "m and v start at zero");

    float *params = xcalloc(lay.n_elements, sizeof(float)), *grads = xmalloc(n * sizeof(float));
    float *want = xmalloc(n * sizeof(float)), *m = xcalloc(n, sizeof(float)),
          *v = xcalloc(n, sizeof(float));
    memcpy(want, host + lo, n * sizeof(float));
    for (int step = 1; step <= 2; step++) {
        /* The gaps between tensors hold zero gradients, as backward leaves them. */
        memset(grads, 0, n * sizeof(float));
        for (int t = 0; t < lay.n_tensors; t++)
            for (size_t i = lay.tensors[t].offset; i < lay.tensors[t].offset + lay.tensors[t].numel;
                 i++)
                if (i >= lo && i < hi) grads[i - lo] = (float)((i * 31 + step) % 97) / 97.0f - 0.5f;
        const optimizer_schedule s = {.lr = 1e-3 * step, .factor = step};
        optimizer_grad_sum_squares(opt, grads);
        optimizer_clip(opt, 1e9); /* a factor of 1 */
        optimizer_step(opt, params, grads, &s);
        for (int t = 0; t < lay.n_tensors; t++) {
            const param_tensor *p = &lay.tensors[t];
            const size_t b = p->offset > lo ? p->offset : lo;
            const size_t e = p->offset + p->numel < hi ? p->offset + p->numel : hi;
            if (b >= e) continue;
            const adamw_hyper h = {.lr = (float)s.lr,
                                   .beta1 = 0.9f,
                                   .beta2 = 0.95f,
                                   .eps = 1e-8f,
                                   .weight_decay = p->decay ? 0.1f : 0.0f,
                                   .t = step};
            adamw_update_cpu(want + (b - lo), grads + (b - lo), m + (b - lo), v + (b - lo), e - b,
                             1.0f, &h);
        }
    }
    check(opt->step == 2, "two steps counted");
    check(memcmp(opt->master, want, n * sizeof(float)) == 0,
          "master after two steps = adamw_update_cpu per tensor (bitwise)");
    check(memcmp(params + lo, want, n * sizeof(float)) == 0, "params [lo, hi) = the new master");
    check(memcmp(opt->state[0], m, n * sizeof(float)) == 0 &&
              memcmp(opt->state[1], v, n * sizeof(float)) == 0,
          "m and v as the kernel's (bitwise)");
    /* A non-finite gradient norm: the skip factor, and nothing moves. */
    const float skip = CLIP_SKIP_STEP;
    memcpy(opt->grad_scale, &skip, sizeof skip);
    const optimizer_schedule s = {.lr = 1e-3, .factor = 1};
    optimizer_step(opt, params, grads, &s);
    check(memcmp(opt->master, want, n * sizeof(float)) == 0, "a skipped step changes nothing");
    optimizer_free(opt);
    free(host), free(params), free(grads), free(want), free(m), free(v);
    layout_free(&lay);
}

int main(void) {
    check_shard_maps();
    check_kinds();
    check_steps();
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
