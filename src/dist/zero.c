/* ZeRO-1 shard maps: even slices, and slices along whole tensors (see zero.h). */
#include "dist/zero.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"

static void map_alloc(shard_map *map, size_t n_elements, int world) {
    CHECK(world >= 1, "a shard map for %d ranks", world);
    CHECK(n_elements % ZERO_ALIGN == 0, "buffer of %zu elements is not %d-aligned", n_elements,
          ZERO_ALIGN);
    map->world = world;
    map->n_elements = n_elements;
    map->lo = xcalloc((size_t)world, sizeof(size_t));
    map->hi = xcalloc((size_t)world, sizeof(size_t));
}

void zero_shard_map(shard_map *map, size_t n_elements, int world) {
    map_alloc(map, n_elements, world);
    /* Whole units of ZERO_ALIGN elements, spread as evenly as integers allow. */
    size_t units = n_elements / ZERO_ALIGN;
    for (int r = 0; r < world; r++) {
        map->lo[r] = units * (size_t)r / (size_t)world * ZERO_ALIGN;
        map->hi[r] = units * (size_t)(r + 1) / (size_t)world * ZERO_ALIGN;
    }
}

/* The buffer as the map cuts it: one piece per tensor, from its offset to
 * the next tensor's (the gap belongs with it), whose cost grows evenly over
 * its numel elements. A piece that may be cut can be cut at any ZERO_ALIGN
 * boundary inside its elements; any piece at its ends. */
typedef struct {
    size_t begin, end, numel;
    double cost, before; /* its cost, and the cost of every piece before it */
    bool cut;
} piece;

typedef struct {
    const piece *p;
    int n;
    size_t n_elements;
    double total;
} cost_line;

/* Slack for sums of doubles compared with a capacity. */
static double slack(const cost_line *l) { return 1e-9 * l->total; }

/* The last piece whose begin (by_cost: whose cost before it) is at most x,
 * by bisection: both grow with the index. (Positions are exact in a
 * double.) */
static int last_piece_from(const cost_line *l, double x, bool by_cost) {
    int a = 0, b = l->n - 1;
    while (a < b) {
        const int mid = (a + b + 1) / 2;
        const double key = by_cost ? l->p[mid].before : (double)l->p[mid].begin;
        if (key <= x)
            a = mid;
        else
            b = mid - 1;
    }
    return a;
}

/* The piece holding position x. */
static int piece_at(const cost_line *l, size_t x) { return last_piece_from(l, (double)x, false); }

/* The cost of [0, x). */
static double cost_to(const cost_line *l, size_t x) {
    if (x >= l->n_elements) return l->total;
    const piece *q = &l->p[piece_at(l, x)];
    const size_t in = x - q->begin < q->numel ? x - q->begin : q->numel;
    return q->before + q->cost * (double)in / (double)q->numel;
}

/* The last edge allowed in piece q whose cost to it is at most `budget`
 * (an edge of q with cost_to <= budget exists: its begin). */
static size_t last_edge_within(const piece *q, double budget) {
    if (!q->cut) return q->begin;
    const double units = (budget - q->before) / q->cost * (double)q->numel / ZERO_ALIGN;
    size_t k = units <= 0 ? 0 : (size_t)units;
    const size_t most = q->numel / ZERO_ALIGN;
    return q->begin + (k < most ? k : most) * ZERO_ALIGN;
}

/* The furthest edge y >= x with cost(x, y) <= cap: where one rank that
 * starts at edge x ends when it takes all it can. */
static size_t reach(const cost_line *l, size_t x, double cap) {
    const double budget = cost_to(l, x) + cap + slack(l);
    if (l->total <= budget) return l->n_elements;
    int i = piece_at(l, x);
    while (l->p[i].before + l->p[i].cost <= budget) i++; /* whole pieces fit */
    const size_t y = last_edge_within(&l->p[i], budget);
    return y > x ? y : x;
}

/* The first edge x <= y with cost(x, y) <= cap: where a rank that ends at
 * edge y starts when it takes all it can, going backwards. */
static size_t reach_back(const cost_line *l, size_t y, double cap) {
    const double floor_cost = cost_to(l, y) - cap - slack(l);
    if (floor_cost <= 0) return 0;
    int i = piece_at(l, y >= l->n_elements ? l->n_elements - 1 : y);
    if (y == l->p[i].begin && i > 0) i--;
    while (i > 0 && l->p[i].before >= floor_cost) i--; /* whole pieces fit */
    const piece *q = &l->p[i];
    if (q->before >= floor_cost) return q->begin;
    if (!q->cut) return q->end < y ? q->end : y;
    /* the first ZERO_ALIGN edge inside q at or past floor_cost */
    const double units = (floor_cost - q->before) / q->cost * (double)q->numel / ZERO_ALIGN;
    size_t k = (size_t)ceil(units);
    const size_t most = q->numel / ZERO_ALIGN;
    const size_t x = k <= most ? q->begin + k * ZERO_ALIGN : q->end;
    return x < y ? x : y;
}

/* Whether world ranks of at most cap each cover the buffer. */
static bool fits(const cost_line *l, int world, double cap) {
    size_t x = 0;
    for (int r = 0; r < world && x < l->n_elements; r++) x = reach(l, x, cap);
    return x >= l->n_elements;
}

/* The edge nearest the cost target: inside a piece that may be cut, the
 * nearest ZERO_ALIGN boundary; else the nearer end of the piece (the
 * earlier on a tie). */
static size_t edge_near(const cost_line *l, double target) {
    if (target >= l->total) return l->n_elements;
    const piece *q = &l->p[last_piece_from(l, target, true)];
    const double into = target - q->before;
    if (q->cut) {
        const double units = into / q->cost * (double)q->numel / ZERO_ALIGN;
        const size_t k = (size_t)llround(units), most = q->numel / ZERO_ALIGN;
        return q->begin + (k < most ? k : most) * ZERO_ALIGN;
    }
    return into <= q->cost - into ? q->begin : q->end;
}

void zero_shard_map_tensors(shard_map *map, size_t n_elements, int world,
                            const shard_tensor *tensors, int n_tensors) {
    map_alloc(map, n_elements, world);
    CHECK(n_tensors >= 1, "a shard map of no tensors");
    double total = 0.0;
    for (int i = 0; i < n_tensors; i++) {
        const shard_tensor *t = &tensors[i];
        CHECK(t->cost > 0 && t->numel > 0, "tensor %d of the shard map has no cost or size", i);
        CHECK(t->offset % ZERO_ALIGN == 0 && t->offset + t->numel <= n_elements &&
                  (i == 0 ? t->offset == 0
                          : t->offset >= tensors[i - 1].offset + tensors[i - 1].numel),
              "tensor %d of the shard map at [%zu, +%zu) is not aligned, in order, inside %zu "
              "elements and (the first) at 0",
              i, t->offset, t->numel, n_elements);
        total += t->cost;
    }
    const double fair = total / world;
    piece *p = xcalloc((size_t)n_tensors, sizeof *p);
    double before = 0.0, largest_whole = 0.0;
    for (int i = 0; i < n_tensors; i++) {
        const shard_tensor *t = &tensors[i];
        p[i] = (piece){.begin = t->offset,
                       .end = i + 1 < n_tensors ? tensors[i + 1].offset : n_elements,
                       .numel = t->numel,
                       .cost = t->cost,
                       .before = before,
                       .cut = t->splittable && t->cost > fair};
        before += t->cost;
        if (!p[i].cut && t->cost > largest_whole) largest_whole = t->cost;
    }
    const cost_line l = {.p = p, .n = n_tensors, .n_elements = n_elements, .total = total};

    /* The least capacity per rank that covers the buffer (what the largest
     * shard must hold at best), by bisection between its two bounds. */
    double lo = fair > largest_whole ? fair : largest_whole, hi = total;
    if (!fits(&l, world, lo)) {
        for (int it = 0; it < 100 && hi - lo > 1e-7 * fair; it++) {
            const double mid = 0.5 * (lo + hi);
            if (fits(&l, world, mid))
                hi = mid;
            else
                lo = mid;
        }
        lo = hi;
    }
    const double cap = lo;
    /* Under that capacity, each edge goes as near its fair place as the
     * ranks before it (at most cap each) and after it (enough of them to
     * cover the rest) allow. after[k]: the first edge from which k ranks
     * still cover the end. */
    size_t *after = xcalloc((size_t)world + 1, sizeof(size_t));
    after[0] = n_elements;
    for (int k = 1; k <= world; k++) after[k] = reach_back(&l, after[k - 1], cap);
    size_t prev = 0;
    for (int r = 1; r < world; r++) {
        const size_t most = reach(&l, prev, cap);
        size_t least = after[world - r] > prev ? after[world - r] : prev;
        if (least > most) least = most; /* rounding: the reach wins */
        size_t edge = edge_near(&l, total * r / world);
        edge = edge < least ? least : edge > most ? most : edge;
        map->hi[r - 1] = map->lo[r] = edge;
        prev = edge;
    }
    map->lo[0] = 0;
    map->hi[world - 1] = n_elements;
    free(after);
    free(p);
}

void zero_shard_map_copy(shard_map *dst, const shard_map *src) {
    map_alloc(dst, src->n_elements, src->world);
    memcpy(dst->lo, src->lo, (size_t)src->world * sizeof(size_t));
    memcpy(dst->hi, src->hi, (size_t)src->world * sizeof(size_t));
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

int zero_shard_owner(const shard_map *map, size_t i) {
    int a = 0, b = map->world - 1; /* the last r with lo[r] <= i */
    while (a < b) {
        const int mid = (a + b + 1) / 2;
        if (map->lo[mid] <= i)
            a = mid;
        else
            b = mid - 1;
    }
    return a;
}

size_t zero_shard_largest(const shard_map *map) {
    size_t most = 0;
    for (int r = 0; r < map->world; r++)
        if (map->hi[r] - map->lo[r] > most) most = map->hi[r] - map->lo[r];
    return most;
}
