/* Ranks that start from different settings: another .ini on another
 * node's file system, an MPMD line (-np 1 ... : -np 1 ...) that gives each
 * rank its own overrides, an out_dir whose ${VAR} is set differently per
 * node. They would train on with different learning rates or seeds, write
 * one checkpoint into several directories, or fail in the first collective
 * whose sizes differ with an MPI message only. Every rank compares a digest
 * of its loaded config at the start, path keys as written (a ${VAR} may
 * give each rank or node its own copy of the data), out_dir as expanded;
 * on a difference rank 0 names the first rank that differs, its host and
 * the keys, and every rank exits 2. */
#ifndef GPT2_TRAIN_SAFETY_CONFIG_AGREE_H
#define GPT2_TRAIN_SAFETY_CONFIG_AGREE_H

#include "config/config.h"
#include "dist/group.h"

/* Collective over job; returns when every rank has the same config. */
void config_agree_or_fail(const config *cfg, const dist_group *job);
#endif
