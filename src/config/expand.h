/* ${VAR} in the values of path keys (expand.c): the environment's value in
 * place of ${NAME}, "$$" for one literal '$' (so "$${" writes "${"), any
 * other '$' kept as it is. Done once, by config_load, for every key whose
 * table entry says it is a path, whether set in the .ini file or on the
 * command line. Private to the config room. */
#ifndef GPT2_CONFIG_EXPAND_H
#define GPT2_CONFIG_EXPAND_H

#include <stdbool.h>
#include <stddef.h>

/* Does text hold a '$' that expansion reads ("${" or "$$")? */
bool config_expand_needed(const char *text);

/* The expanded text into out (len bytes, terminator included); false with
 * the reason in why: a variable that is not set, a name that is not one,
 * an unterminated "${", or a result of len bytes or more. */
bool config_expand(const char *text, char *out, size_t len, char *why, size_t why_len);

/* text written so that config_expand gives it back: each '$' that starts
 * "${" or "$$" doubled. */
void config_expand_escape(const char *text, char *out, size_t len);
#endif
