/* ZeRO-1 shard map: rank r owns the contiguous slice [lo[r], hi[r]) of the
 * flat parameter buffer, for any rank count; the slices tile the buffer in
 * rank order and every edge lies on a ZERO_ALIGN boundary.
 *
 * Edges fall between whole tensors (zero_shard_map_tensors), so that an
 * optimizer that needs a whole matrix (Muon's orthogonalisation, any
 * per-tensor norm) finds it on one rank. Only a tensor larger than a fair
 * share (the buffer's cost over the ranks) whose optimizer works element by
 * element (AdamW) may be cut, at ZERO_ALIGN boundaries: keeping the tied
 * embedding of 124M (31% of the parameters) whole on 8 ranks would give one
 * rank 2.5 times the mean state. Within those rules the largest shard costs
 * the least any cut gives (bisection over the capacity of a rank, each rank
 * filled greedily), and each edge then goes as near its fair place (rank
 * r's edge at r/world of the total cost) as that capacity allows, so that
 * the ranks are as even as the tensors let them be. A rank may own nothing
 * where there are more ranks than whole tensors to spread (a matrix
 * optimizer at high rank counts; AdamW's maps have no empty shard).
 *
 * zero_shard_map cuts anywhere on ZERO_ALIGN boundaries, evenly: the map of
 * checkpoints written before tensor-aligned maps, and of tests. */
#ifndef GPT2_DIST_ZERO_H
#define GPT2_DIST_ZERO_H

#include <stdbool.h>
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

/* One tensor of the flat buffer, as the shard map sees it. */
typedef struct {
    size_t offset, numel; /* offset a multiple of ZERO_ALIGN */
    double cost;          /* its share of the optimizer's work or memory (> 0) */
    bool splittable;      /* the optimizer works on it element by element */
} shard_tensor;

/* Even slices of whole ZERO_ALIGN units. n_elements must be a multiple of
 * ZERO_ALIGN (the layout pads to it). */
void zero_shard_map(shard_map *map, size_t n_elements, int world);
/* Slices along whole tensors (tensors in offset order, not overlapping,
 * inside [0, n_elements)); the elements between tensors belong with the
 * tensor before them. */
void zero_shard_map_tensors(shard_map *map, size_t n_elements, int world,
                            const shard_tensor *tensors, int n_tensors);
void zero_shard_map_copy(shard_map *dst, const shard_map *src);
void zero_shard_map_free(shard_map *map);

/* The part of [begin, end) in rank r's shard: [*lo, *hi), empty (*lo ==
 * *hi) where the two do not meet. */
void zero_shard_part(const shard_map *map, int r, size_t begin, size_t end, size_t *lo, size_t *hi);
/* The rank whose shard holds element i (the last of several when empty
 * shards share the edge). */
int zero_shard_owner(const shard_map *map, size_t i);
/* The largest shard's length. */
size_t zero_shard_largest(const shard_map *map);

#ifdef __cplusplus
}
#endif
#endif
