/* The trainer's command line, read into what to do, the config file and the
 * overrides: "key=value" as before, and the spellings nanoGPT users type,
 * "--key=value" and "--key value" (a boolean key alone, "--save_init", is
 * true); --help, --version and --print-config anywhere. The config file is
 * the first argument that is neither an option nor key=value, and optional
 * (the key table's defaults, GPT-2 124M). */
#ifndef GPT2_CONFIG_ARGS_H
#define GPT2_CONFIG_ARGS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    ARGS_RUN,
    ARGS_PRINT_CONFIG,
    ARGS_HELP,    /* wins over everything else on the line */
    ARGS_VERSION, /* wins over all but --help */
    ARGS_USAGE,   /* nothing at all was given */
} config_args_action;

typedef struct {
    config_args_action action;
    const char *config_path; /* argv's string, or NULL: the defaults */
    int n_overrides;
    char **overrides; /* "key=value" each, as config_load takes them */
} config_args;

/* Reads argv[1..argc); false with the reason in why (naming the argument
 * and the fix) on a bad command line. config_args_free frees out either way. */
bool config_args_parse(int argc, char *const *argv, config_args *out, char *why, size_t why_len);
void config_args_free(config_args *args);
#endif
