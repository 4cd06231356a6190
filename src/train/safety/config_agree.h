/* Ranks that start from different settings: another .ini on another
 * node's file system, an MPMD line (-np 1 ... : -np 1 ...) that gives each
 * rank its own overrides, a ${VAR} set differently per node. They would
 * train on with different learning rates or seeds, or fail in the first
 * collective whose sizes differ with an MPI message only. Every rank
 * compares a digest of its resolved config at the start; on a difference
 * rank 0 names the first rank that differs, its host and the keys, and
 * every rank exits 2. */
#ifndef GPT2_TRAIN_SAFETY_CONFIG_AGREE_H
#define GPT2_TRAIN_SAFETY_CONFIG_AGREE_H

#include "config/config.h"
#include "dist/group.h"

/* Collective over job; returns when every rank has the same config. */
void config_agree_or_fail(const config *cfg, const dist_group *job);
#endif
