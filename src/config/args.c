/* The trainer's command line (see args.h): options are rewritten into the
 * "key=value" overrides that config_load reads, so that every spelling of a
 * setting meets the same parser and the same error messages. */
#include "config/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "config/elide.h"
#include "config/keys.h"
#include "config/values.h"

static bool is_flag(const char *arg, const char *a, const char *b) {
    return strcmp(arg, a) == 0 || (b && strcmp(arg, b) == 0);
}

static void add_override(config_args *out, const char *key, size_t key_len, const char *value) {
    size_t n = key_len + 1 + strlen(value) + 1;
    char *text = xmalloc(n);
    snprintf(text, n, "%.*s=%s", (int)key_len, key, value);
    out->overrides[out->n_overrides++] = text;
}

/* "--max-steps" names max_steps (argparse's habit); the known key of that
 * name, or false with why naming the option and the key it likely meant. */
static bool option_key(const char *name, size_t len, char *key, size_t key_size,
                       const config_key **k, char *why, size_t why_len) {
    if (len >= key_size) len = key_size - 1;
    for (size_t i = 0; i < len; i++) key[i] = name[i] == '-' ? '_' : name[i];
    key[len] = '\0';
    *k = config_key_find(key);
    if (*k) return true;
    char shown[ELIDE_KEEP + 40];
    elide(key, shown, sizeof shown);
    for (size_t i = 0; i < config_n_derived; i++)
        if (strcmp(key, config_derived[i].name) == 0)
            return snprintf(why, why_len, "--%s: %s is derived (%s) and cannot be set", shown,
                            shown, config_derived[i].rule),
                   false;
    const char *guess = config_key_suggest(key);
    if (guess)
        snprintf(why, why_len, "--%s: unknown key (did you mean '--%s'?)", shown, guess);
    else
        snprintf(why, why_len, "--%s: unknown key (gpt2_ddp --help lists every key)", shown);
    return false;
}

/* One "--key=value", "--key value" or boolean "--key" at argv[*i]; moves *i
 * past a value taken from the next argument. */
static bool read_option(int argc, char *const *argv, int *i, config_args *out, char *why,
                        size_t why_len) {
    const char *name = argv[*i] + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    char key[128];
    const config_key *k;
    if (!option_key(name, len, key, sizeof key, &k, why, why_len)) return false;
    if (eq) return add_override(out, key, strlen(key), eq + 1), true;
    const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
    bool ignored;
    if (k->type == KEY_BOOL) {
        /* "--save_init" alone is true; "--save_init false" takes its value
         * only when the next argument is a boolean (it may be the config). */
        bool takes_next = next && config_parse_bool(next, &ignored);
        add_override(out, key, strlen(key), takes_next ? next : "true");
        *i += takes_next;
        return true;
    }
    if (!next || strncmp(next, "--", 2) == 0)
        return snprintf(why, why_len,
                        "--%s needs a value (write --%s=VALUE, --%s VALUE or %s=VALUE)", key, key,
                        key, key),
               false;
    add_override(out, key, strlen(key), next);
    *i += 1;
    return true;
}

static bool read_args(int argc, char *const *argv, config_args *out, char *why, size_t why_len) {
    bool help = false, version = false, print_config = false;
    for (int i = 1; i < argc; i++) {
        help |= is_flag(argv[i], "--help", "-h");
        version |= is_flag(argv[i], "--version", NULL);
    }
    if (help || version) return out->action = help ? ARGS_HELP : ARGS_VERSION, true;
    if (argc <= 1) return out->action = ARGS_USAGE, true;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char shown[ELIDE_KEEP + 40];
        elide(arg, shown, sizeof shown);
        if (is_flag(arg, "--print-config", "--print_config")) {
            print_config = true;
        } else if (strncmp(arg, "--", 2) == 0 && arg[2] != '\0' && arg[2] != '=') {
            if (!read_option(argc, argv, &i, out, why, why_len)) return false;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return snprintf(why, why_len,
                            "unknown option '%s' (settings are key=value or --key=value; "
                            "gpt2_ddp --help lists them)",
                            shown),
                   false;
        } else if (strchr(arg, '=')) {
            const char *eq = strchr(arg, '=');
            add_override(out, arg, (size_t)(eq - arg), eq + 1);
        } else if (!out->config_path && out->n_overrides == 0) {
            out->config_path = arg;
        } else if (!out->config_path) {
            return snprintf(why, why_len,
                            "'%s' after settings: a config file comes first (gpt2_ddp "
                            "CONFIG.ini --key=value ...), and a setting is key=value or "
                            "--key=value",
                            shown),
                   false;
        } else {
            return snprintf(why, why_len,
                            "override '%s' is not key=value (settings after CONFIG.ini are "
                            "key=value or --key=value)",
                            shown),
                   false;
        }
    }
    out->action = print_config ? ARGS_PRINT_CONFIG : ARGS_RUN;
    return true;
}

bool config_args_parse(int argc, char *const *argv, config_args *out, char *why, size_t why_len) {
    memset(out, 0, sizeof *out);
    /* Each argument gives at most one override. */
    out->overrides = xcalloc(argc > 0 ? (size_t)argc : 1, sizeof *out->overrides);
    if (why_len) why[0] = '\0';
    return read_args(argc, argv, out, why, why_len);
}

void config_args_free(config_args *args) {
    for (int i = 0; i < args->n_overrides; i++) free(args->overrides[i]);
    free(args->overrides);
    memset(args, 0, sizeof *args);
}
