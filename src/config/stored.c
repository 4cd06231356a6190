/* A stored config read back and compared with this run's (see stored.h),
 * through the key table, so that a key added later is compared too. */
#include "config/stored.h"

#include <stdio.h>
#include <string.h>

#include "config/expand.h"
#include "config/ini.h"
#include "config/keys.h"
#include "config/values.h"

typedef struct {
    config *cfg;
    int keys; /* set from the text */
} stored_ctx;

static int set_stored(void *ctx_, const ini_entry *e) {
    stored_ctx *ctx = ctx_;
    const config_key *k = config_key_find(e->key);
    char why[512];
    if (!k) return 0; /* a key this version does not have */
    if (!k->path || !config_expand_needed(e->value)) {
        if (config_key_set(ctx->cfg, k, e->value, why, sizeof why)) ctx->keys++;
        return 0;
    }
    /* config_format escaped every '$' of a path: expanding reads no
     * variable, it only resolves the escapes. */
    char plain[CONFIG_STR_MAX];
    if (config_expand(e->value, plain, sizeof plain, why, sizeof why) &&
        config_key_set(ctx->cfg, k, plain, why, sizeof why))
        ctx->keys++;
    return 0;
}

bool config_read_stored(config *cfg, const char *text) {
    memset(cfg, 0, sizeof *cfg);
    char why[512];
    for (size_t i = 0; i < config_n_keys; i++)
        config_key_set(cfg, &config_keys[i], config_keys[i].def, why, sizeof why);
    stored_ctx ctx = {cfg, 0};
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    if (!f) return false;
    ini_read_stream(f, "stored config", set_stored, &ctx, NULL);
    fclose(f);
    return ctx.keys > 0;
}

int config_diff(const config *was, const config *now, config_change *out, int max) {
    int n = 0;
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        char a[sizeof out->was], b[sizeof out->now];
        config_key_format(was, k, false, a, sizeof a);
        config_key_format(now, k, false, b, sizeof b);
        if (strcmp(a, b) == 0) continue;
        if (n < max) {
            out[n].key = k->name;
            memcpy(out[n].was, a, sizeof a);
            memcpy(out[n].now, b, sizeof b);
        }
        n++;
    }
    return n;
}

/* The next name of a comma-separated list into name ("" at the end);
 * returns where the rest starts. Spaces around names are dropped. */
static const char *next_name(const char *list, char *name, size_t len) {
    while (*list == ' ' || *list == ',') list++;
    size_t n = strcspn(list, ",");
    const char *rest = list + n;
    while (n > 0 && list[n - 1] == ' ') n--;
    if (n >= len) n = len - 1;
    memcpy(name, list, n);
    name[n] = '\0';
    return rest;
}

bool config_change_allowed(const config *cfg, const char *key) {
    char name[CONFIG_STR_MAX];
    for (const char *p = next_name(cfg->allow_changed, name, sizeof name); name[0];
         p = next_name(p, name, sizeof name))
        if (strcmp(name, key) == 0) return true;
    return false;
}

bool config_check_allowed(const config *cfg, char *why, size_t why_len) {
    char name[CONFIG_STR_MAX];
    for (const char *p = next_name(cfg->allow_changed, name, sizeof name); name[0];
         p = next_name(p, name, sizeof name)) {
        if (config_key_find(name)) continue;
        const char *guess = config_key_suggest(name);
        char hint[CONFIG_STR_MAX + 32] = " (gpt2_ddp --help lists every key)";
        if (guess) snprintf(hint, sizeof hint, " (did you mean '%s'?)", guess);
        snprintf(why, why_len,
                 "allow_changed = %s: '%s' is not a key%s; allow_changed lists the keys a resume "
                 "may change, comma-separated: allow_changed=lr,max_steps",
                 cfg->allow_changed, name, hint);
        return false;
    }
    return true;
}
