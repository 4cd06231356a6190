/* The run directory of a variant: a run whose name was left to the config
 * file (run_name empty: "tiny" for configs/tiny.ini) and whose command line
 * changes what defines the run already there (the README's
 * `gpt2_ddp configs/tiny.ini lr=1e-3 max_steps=500` right after the demo).
 * Refusing it, as a resume that changes keys is refused, would make every
 * quick variant of a run fail; training into the run's directory would
 * overwrite it. It gets a directory of its own, named after those settings
 * (checkpoints/tiny_lr0.001_max_steps500), which the same command finds
 * again; allow_changed naming the keys still continues the run there. */
#ifndef GPT2_TRAIN_VARIANT_NAME_H
#define GPT2_TRAIN_VARIANT_NAME_H

#include "config/config.h"
#include "dist/group.h"

/* Collective over job: cfg->run_name becomes the variant's name where it
 * is one (rank 0 decides and says so). */
void variant_name_choose(config *cfg, const dist_group *job);
#endif
