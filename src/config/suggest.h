/* "Did you mean ...?": the name, among the known ones, that a mistyped name
 * most likely meant. Generic over any list of names. */
#ifndef GPT2_CONFIG_SUGGEST_H
#define GPT2_CONFIG_SUGGEST_H

#include <stddef.h>

/* The name of names[0..n_names) closest to typo, or NULL when none is close:
 * a few edits away (case-insensitive; a swap of neighbours is one edit), or
 * a name that begins with typo ("warmup" -> warmup_steps, at least 4 letters),
 * or a name that typo begins with, followed by '_' ("lr_rate" -> lr). */
const char *suggest_name(const char *typo, const char *const *names, size_t n_names);
#endif
