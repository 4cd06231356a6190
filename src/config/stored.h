/* A config stored as text with weights or a checkpoint (config_format's
 * output) read back, the keys in which it differs from this run's, and the
 * allow_changed list that says which differences a resume accepts. */
#ifndef GPT2_CONFIG_STORED_H
#define GPT2_CONFIG_STORED_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* Reads text into cfg over the defaults. A key the text does not set (a
 * file of an older version) keeps its default; unknown keys and values
 * that no longer parse are skipped, so that an old file still compares.
 * Path values are read back as written (their '$' escapes resolved; no
 * environment variable is read). False when text holds no key at all. */
bool config_read_stored(config *cfg, const char *text);

/* One key whose value differs, both values as text. */
typedef struct {
    const char *key; /* the key table's name */
    char was[CONFIG_STR_MAX + 8], now[CONFIG_STR_MAX + 8];
} config_change;

/* The keys (in key-table order) whose values differ between was and now;
 * returns how many, of which the first max are stored in out. */
int config_diff(const config *was, const config *now, config_change *out, int max);

/* Does cfg's allow_changed list name key? */
bool config_change_allowed(const config *cfg, const char *key);

/* Every name of allow_changed is a key: false with "allow_changed = ...:
 * 'x' is not a key (did you mean 'y'?)" in why otherwise. */
bool config_check_allowed(const config *cfg, char *why, size_t why_len);
#endif
