/* A key's value as text (values.c), by the key's type and allowed values:
 * parsing it into the config, checking a stored one, and formatting it so
 * that it parses back to the same value. Private to the config room. */
#ifndef GPT2_CONFIG_VALUES_H
#define GPT2_CONFIG_VALUES_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "config/keys.h"

/* Stores the text as key k's value and checks it; false with the reason in
 * why on any problem ("not an integer", "out of range: must be in [1, 8]"). */
bool config_key_set(config *cfg, const config_key *k, const char *text, char *why, size_t why_len);

/* A boolean's spellings (true/false, yes/no, on/off, 1/0, any case): true
 * with the value in *out when s is one. */
bool config_parse_bool(const char *s, bool *out);

/* Is the stored value allowed? Used after parsing and by config_validate,
 * which also sees configs that were not parsed (a checkpoint's). */
bool config_key_check(const config *cfg, const config_key *k, char *why, size_t why_len);

/* A field's value as .ini text; quote says whether strings get quoted where
 * the parser needs it (config_format) or stay raw (error messages). */
void config_key_format(const config *cfg, const config_key *k, bool quote, char *buf, size_t len);

/* What k allows besides its type, for --help: "in [1, 1024]", ">= 0",
 * "cosine, linear, constant", or "" for any value of the type. */
void config_key_allowed(const config_key *k, char *buf, size_t len);

/* s as an .ini value: quoted (with \" and \\ escapes) where the parser would
 * otherwise trim it or cut it at a comment. */
void config_value_quote(const char *s, char *buf, size_t len);
#endif
