/* The key table (keys.c): every setting of config with its type, field,
 * default, allowed values, section and help. One table drives the defaults,
 * the parsing, --help, config_format and the range checks, so that the help
 * text, the printed config and the parser cannot drift apart. Private to
 * the config room. */
#ifndef GPT2_CONFIG_KEYS_H
#define GPT2_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    KEY_INT,
    KEY_INT64,
    KEY_UINT64,
    KEY_DOUBLE,
    KEY_BOOL,
    KEY_STRING,
    KEY_ENUM
} key_type;

/* Allowed values of a numeric key. Bounds are doubles: every bound we use is
 * exact in a double, and hi = INFINITY leaves only the C type's limit. */
typedef struct {
    bool on; /* false: any value of the type */
    double lo, hi;
    bool lo_open, hi_open; /* open bounds exclude the end point (lr > 0) */
} key_range;

typedef struct {
    const char *name;    /* the struct field's name */
    const char *section; /* [section] in config_format and --help; parsing ignores it */
    key_type type;
    size_t offset, size; /* of the field in config */
    const char *def;     /* default, parsed like a value from a file */
    key_range range;
    const char *const *choices; /* KEY_ENUM: allowed values, NULL-terminated */
    const char *help;
    bool path; /* a file or directory: ${VAR} in its value is expanded (expand.h) */
} config_key;

extern const config_key config_keys[];
extern const size_t config_n_keys;

/* Fields the trainer computes, with the rule it computes them by: named so
 * that setting one says why it can't. */
typedef struct {
    const char *name, *rule;
} config_derived_key;

extern const config_derived_key config_derived[];
extern const size_t config_n_derived;

/* The key called name, or NULL. */
const config_key *config_key_find(const char *name);

/* The key a mistyped name most likely meant (suggest.h), or NULL. */
const char *config_key_suggest(const char *name);
#endif
