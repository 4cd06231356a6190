/* The resolved config as one JSON object, for the run record of
 * metrics.jsonl: every key, numbers as JSON numbers, booleans as true or
 * false, strings as strings. */
#ifndef GPT2_CONFIG_JSON_H
#define GPT2_CONFIG_JSON_H

#include <stddef.h>

#include "config/config.h"

/* {"n_layer":12,...,"seed":1337,...}; returns bytes needed (like snprintf). */
size_t config_format_json(const config *cfg, char *buf, size_t len);

/* s as a JSON string with its quotes; returns bytes needed (like snprintf). */
size_t json_quote(const char *s, char *buf, size_t len);
#endif
