/* The config as JSON (see json.h), driven by the key table like
 * config_format, so that every key is in the run record. */
#include "config/json.h"

#include <stdio.h>

#include "config/keys.h"
#include "config/values.h"

size_t json_quote(const char *s, char *buf, size_t len) {
    size_t o = 0;
#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (o + 1 < len) buf[o] = (c);                                                             \
        o++;                                                                                       \
    } while (0)
    PUT('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            PUT('\\');
            PUT((char)*p);
        } else if (*p < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            for (const char *e = esc; *e; e++) PUT(*e);
        } else {
            PUT((char)*p);
        }
    }
    PUT('"');
#undef PUT
    if (len) buf[o < len ? o : len - 1] = '\0';
    return o;
}

size_t config_format_json(const config *cfg, char *buf, size_t len) {
    size_t used = 0;
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        char value[CONFIG_STR_MAX + 32], quoted[6 * CONFIG_STR_MAX + 8];
        config_key_format(cfg, k, false, value, sizeof value);
        const char *text = value;
        if (k->type == KEY_STRING || k->type == KEY_ENUM) {
            json_quote(value, quoted, sizeof quoted);
            text = quoted;
        }
        const size_t room = used < len ? len - used : 0;
        const int n =
            snprintf(room ? buf + used : NULL, room, "%s\"%s\":%s", i ? "," : "{", k->name, text);
        if (n > 0) used += (size_t)n;
    }
    const size_t room = used < len ? len - used : 0;
    const int n = snprintf(room ? buf + used : NULL, room, "}");
    return used + (n > 0 ? (size_t)n : 0);
}
