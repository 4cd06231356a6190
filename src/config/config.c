/* Run configuration (see config.h): config_load (defaults, the .ini file,
 * key=value overrides, with errors naming file:line and the key),
 * config_format and config_print_help, all driven by the key table
 * (keys.h). The consistency rules are in validate.c; the INI syntax in
 * ini.c; a key's value as text in values.c. */
#include "config/config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "config/elide.h"
#include "config/expand.h"
#include "config/ini.h"
#include "config/keys.h"
#include "config/values.h"

/* ------------------------------------------------------------ error output */

/* An error at a file line, or on the command line (an override: path NULL). */
_Noreturn __attribute__((format(printf, 2, 3))) static void fail_source(const ini_source *src,
                                                                        const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (src->path) fail_collective(EXIT_USAGE, "%s:%d: %s", src->path, src->line, msg);
    fail_collective(EXIT_USAGE, "command line: %s", msg);
}

/* Why name is not a key, naming the key it likely meant. */
static void unknown_key(const char *name, const char *value, char *why, size_t why_len) {
    char shown_name[ELIDE_KEEP + 40], shown[ELIDE_KEEP + 40];
    elide(name, shown_name, sizeof shown_name);
    elide(value, shown, sizeof shown);
    for (size_t i = 0; i < config_n_derived; i++)
        if (strcmp(name, config_derived[i].name) == 0) {
            snprintf(why, why_len, "%s = %s: %s is derived (%s) and cannot be set", name, shown,
                     name, config_derived[i].rule);
            return;
        }
    const char *guess = config_key_suggest(name);
    if (guess)
        snprintf(why, why_len, "%s = %s: unknown key (did you mean '%s'?)", shown_name, shown,
                 guess);
    else
        snprintf(why, why_len, "%s = %s: unknown key (gpt2_ddp --help lists every key)", shown_name,
                 shown);
}

/* ---------------------------------------------------------- loading */

/* What config_load's INI callback needs: a key's error is kept in why and
 * reported, with the reader's source, once the reader has returned. */
typedef struct {
    config *cfg;
    int *first_line; /* per key: its line in this file (0: not yet); NULL for overrides */
    config_origin origin;
    char why[1536];
} load_ctx;

/* Sets one key from a file line or an override. first_line finds keys set
 * twice in one file; among overrides the last one wins. */
static int set_entry(void *ctx_, const ini_entry *e) {
    load_ctx *ctx = ctx_;
    const config_key *k = config_key_find(e->key);
    if (!k) return unknown_key(e->key, e->value, ctx->why, sizeof ctx->why), 1;
    char shown[ELIDE_KEEP + 40]; /* a long value leaves room for the reason */
    elide(e->value, shown, sizeof shown);
    if (ctx->first_line) {
        int *seen = &ctx->first_line[k - config_keys];
        if (*seen)
            return snprintf(ctx->why, sizeof ctx->why,
                            "%s = %s: duplicate key, already set on line %d (each key may appear "
                            "once per file)",
                            e->key, shown, *seen),
                   1;
        *seen = e->where.line;
    }
    char why[512];
    if (!config_key_set(ctx->cfg, k, e->value, why, sizeof why))
        return snprintf(ctx->why, sizeof ctx->why, "%s = %s: %s", e->key, shown, why), 1;
    ctx->cfg->origin[k - config_keys] = (unsigned char)ctx->origin;
    return 0;
}

static void load_file(config *cfg, const char *path) {
    load_ctx ctx = {cfg, xcalloc(config_n_keys, sizeof(int)), CONFIG_FROM_FILE, ""};
    ini_error err;
    ini_status status = ini_read_file(path, set_entry, &ctx, &err);
    free(ctx.first_line);
    if (status == INI_IO_ERROR)
        fail_collective(EXIT_USAGE, "cannot read config file '%s': %s", path, err.message);
    if (status == INI_STOPPED) fail_source(&err.where, "%s", ctx.why);
    if (status != INI_OK) fail_source(&err.where, "%s", err.message);
}

static void apply_override(config *cfg, const char *arg) {
    load_ctx ctx = {cfg, NULL, CONFIG_FROM_COMMAND_LINE, ""};
    ini_error err;
    ini_status status = ini_read_override(arg, set_entry, &ctx, &err);
    if (status == INI_STOPPED) fail_source(&err.where, "%s", ctx.why);
    if (status == INI_SYNTAX_ERROR) fail_source(&err.where, "override '%s': %s", arg, err.message);
    if (status != INI_OK)
        fail_source(&err.where,
                    "override '%s' is not key=value (settings are key=value or --key=value)", arg);
}

/* ${VAR} in every path key, from this rank's environment: the value as
 * written is kept for config_format's comment. An unset variable may be
 * unset on some ranks only (mpirun passes the environment to other nodes
 * only with -x), so the ranks agree before any of them exits. */
static void expand_paths(config *cfg) {
    static char msg[2048];
    const char *failed = NULL;
    int slot = 0;
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        if (!k->path) continue;
        if (slot == CONFIG_PATH_KEYS || k->size != CONFIG_STR_MAX)
            FAIL("config key table: path key %s: more than %d path keys, or not %d bytes", k->name,
                 CONFIG_PATH_KEYS, CONFIG_STR_MAX);
        char *value = (char *)cfg + k->offset, *written = cfg->path_written[slot++];
        written[0] = '\0';
        if (failed || !config_expand_needed(value)) continue;
        char expanded[CONFIG_STR_MAX], why[512], shown[ELIDE_KEEP + 40];
        if (!config_expand(value, expanded, sizeof expanded, why, sizeof why)) {
            elide(value, shown, sizeof shown);
            snprintf(msg, sizeof msg, "%s = %s: %s", k->name, shown, why);
            failed = msg;
            continue;
        }
        /* No comment where the value reads as written ("$$" escapes only). */
        char escaped[2 * CONFIG_STR_MAX];
        config_expand_escape(expanded, escaped, sizeof escaped);
        if (strcmp(escaped, value) != 0) memcpy(written, value, CONFIG_STR_MAX);
        memcpy(value, expanded, CONFIG_STR_MAX);
    }
    if (!failed && slot != CONFIG_PATH_KEYS)
        FAIL("config key table: %d path keys, config.h has room for %d", slot, CONFIG_PATH_KEYS);
    fail_collective_any(EXIT_USAGE, failed);
}

/* "configs/tiny.ini" -> "tiny": the run is named after its config file. */
static void file_stem(const char *path, char *out, size_t len) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n == 0) base = "run", n = 3;
    if (n >= len) n = len - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

/* A warm-up chosen for a longer run than the one asked for: the defaults'
 * 700 steps (of 19073) under --max_steps=10, or a file's under a shorter
 * max_steps on the command line. Refusing would make every short first run
 * spell out warmup_steps; keeping the warm-up's share of the run keeps the
 * schedule's shape (warm-up, then the decay to min_lr at max_steps). Both
 * set in one place is the user's own choice: config_validate refuses it.
 * max_steps_at holds max_steps after each layer (config_origin order). */
static void fit_warmup(config *cfg, const char *path, const int *max_steps_at) {
    const config_origin warmup = config_key_origin(cfg, "warmup_steps");
    const int chosen_for = max_steps_at[warmup];
    if (cfg->warmup_steps <= cfg->max_steps || cfg->max_steps < 1 || chosen_for < 1 ||
        warmup >= config_key_origin(cfg, "max_steps"))
        return;
    int64_t fitted = (int64_t)cfg->warmup_steps * cfg->max_steps / chosen_for;
    if (fitted > cfg->max_steps) fitted = cfg->max_steps;
    snprintf(cfg->load_note, sizeof cfg->load_note,
             "warmup_steps = %d (%s, for max_steps = %d) is longer than max_steps = %d: using "
             "warmup_steps = %d, the same share of the run (set warmup_steps to choose another)",
             cfg->warmup_steps, warmup == CONFIG_FROM_DEFAULT ? "the default" : path, chosen_for,
             cfg->max_steps, (int)fitted);
    cfg->warmup_steps = (int)fitted;
}

config_origin config_key_origin(const config *cfg, const char *name) {
    const config_key *k = config_key_find(name);
    if (!k) FAIL("config_key_origin: %s is not a key", name);
    return (config_origin)cfg->origin[k - config_keys];
}

void config_load(config *cfg, const char *path, int n_overrides, char *const *overrides) {
    memset(cfg, 0, sizeof *cfg);
    if (config_n_keys > CONFIG_KEYS_MAX)
        FAIL("config key table: %zu keys, config.h has room for %d", config_n_keys,
             CONFIG_KEYS_MAX);
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        char why[512];
        if (!config_key_set(cfg, k, k->def, why, sizeof why))
            FAIL("config key table: default of %s = '%s': %s", k->name, k->def, why);
    }
    int max_steps_at[3] = {cfg->max_steps, 0, 0};
    if (path) load_file(cfg, path);
    max_steps_at[CONFIG_FROM_FILE] = cfg->max_steps;
    for (int i = 0; i < n_overrides; i++) apply_override(cfg, overrides[i]);
    max_steps_at[CONFIG_FROM_COMMAND_LINE] = cfg->max_steps;
    fit_warmup(cfg, path, max_steps_at);
    expand_paths(cfg);
    cfg->run_name_from_stem = cfg->run_name[0] == '\0';
    if (cfg->run_name_from_stem)
        file_stem(path ? path : "run", cfg->run_name, sizeof cfg->run_name);
}

/* ------------------------------------------------------------- printing */

typedef struct {
    char *buf;
    size_t len, used; /* used may pass len: the size that was needed */
} text_out;

__attribute__((format(printf, 2, 3))) static void out_printf(text_out *o, const char *fmt, ...) {
    size_t room = o->used < o->len ? o->len - o->used : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->used += (size_t)n;
}

/* Derived values follow the key they derive from, as comments, once
 * config_validate has computed them. */
static void format_derived(const config *cfg, const config_key *k, text_out *o) {
    if (strcmp(k->name, "vocab_size") == 0 && cfg->padded_vocab_size > 0)
        out_printf(o, "# padded_vocab_size = %d (derived: %s)\n", cfg->padded_vocab_size,
                   config_derived[0].rule);
    if (strcmp(k->name, "total_batch") == 0 && cfg->grad_accum > 0)
        out_printf(o, "# grad_accum = %d (derived: %s)\n", cfg->grad_accum, config_derived[1].rule);
    if (strcmp(k->name, "dry_run_ranks") == 0 && cfg->world > 0)
        out_printf(o, "# world = %d (derived: %s)\n", cfg->world, config_derived[2].rule);
}

size_t config_format(const config *cfg, char *buf, size_t len) {
    text_out o = {buf, len, 0};
    if (len) buf[0] = '\0';
    const char *section = NULL;
    int path_slot = 0;
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        if (!section || strcmp(section, k->section) != 0)
            out_printf(&o, "%s[%s]\n", section ? "\n" : "", k->section);
        section = k->section;
        char value[4 * CONFIG_STR_MAX + 8]; /* '$' escaped and quoted: 4 bytes a character */
        config_key_format(cfg, k, true, value, sizeof value);
        out_printf(&o, "%s = %s\n", k->name, value);
        if (k->path && cfg->path_written[path_slot][0])
            out_printf(&o, "# %s as written: %s\n", k->name, cfg->path_written[path_slot]);
        path_slot += k->path;
        format_derived(cfg, k, &o);
    }
    return o.used;
}

static const char *type_name(const config_key *k) {
    switch (k->type) {
    case KEY_INT: return "int";
    case KEY_INT64: return "int64";
    case KEY_UINT64: return "uint64";
    case KEY_DOUBLE: return "float";
    case KEY_BOOL: return "bool";
    case KEY_STRING: return "string";
    case KEY_ENUM: return "one of";
    }
    return "?";
}

void config_print_help(FILE *out) {
    fprintf(
        out,
        "Configuration keys: \"key = value\" lines in CONFIG.ini ([section] headers only group\n"
        "them; # and ; start comments), then key=value arguments, which override the file.\n");
    const char *section = NULL;
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        if (!section || strcmp(section, k->section) != 0) fprintf(out, "\n[%s]\n", k->section);
        section = k->section;
        char value[2 * CONFIG_STR_MAX + 8], allowed[256];
        config_value_quote(k->def, value, sizeof value);
        config_key_allowed(k, allowed, sizeof allowed);
        fprintf(out, "  %s = %s\n      %s%s%s: %s\n", k->name, value, type_name(k),
                allowed[0] ? " " : "", allowed, k->help);
    }
    fprintf(out, "\nDerived, not settable:\n");
    for (size_t i = 0; i < config_n_derived; i++)
        fprintf(out, "  %s = %s\n", config_derived[i].name, config_derived[i].rule);
}
