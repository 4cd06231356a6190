/* JSON parsing with located errors (see json_util.h). */
#include "io/json_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"

json_object *json_parse_text(const char *text, size_t len, bool check_utf8, char *err,
                             size_t err_len) {
    if (len > INT_MAX) {
        snprintf(err, err_len, "JSON text of %zu bytes is too long to parse", len);
        return NULL;
    }
    struct json_tokener *tok = json_tokener_new();
    if (!tok) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    /* Trailing characters are ours to check: whitespace only. */
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    (check_utf8 ? JSON_TOKENER_VALIDATE_UTF8 : 0));
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!obj) {
        if (jerr == json_tokener_continue || jerr == json_tokener_success)
            snprintf(err, err_len,
                     "not valid JSON: it ends after %zu bytes in the middle of a value", len);
        else
            snprintf(err, err_len, "not valid JSON at byte %zu: %s", end,
                     json_tokener_error_desc(jerr));
        return NULL;
    }
    for (size_t i = end; i < len; i++) {
        if (!strchr(" \t\r\n", text[i])) {
            snprintf(err, err_len, "not valid JSON: unexpected text after the value at byte %zu",
                     i);
            json_object_put(obj);
            return NULL;
        }
    }
    return obj;
}

json_object *json_read_file(const char *path, char *err, size_t err_len) {
    FILE *f = fopen_regular(path, "rb", 0, NULL, 0); /* a FIFO would block the open */
    if (!f) {
        char why[256];
        snprintf(err, err_len, "%s: %s", path, open_regular_reason(path, errno, why, sizeof why));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        snprintf(err, err_len, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    char why[256];
    json_object *obj = json_parse_text(buf, len, true, why, sizeof why);
    free(buf);
    if (!obj) snprintf(err, err_len, "%s: %s", path, why);
    return obj;
}

json_object *json_member(json_object *obj, const char *key) {
    json_object *value = NULL;
    if (!json_object_object_get_ex(obj, key, &value)) return NULL;
    return value; /* NULL for a JSON null as well */
}

bool json_member_int(json_object *obj, const char *key, int64_t lo, int64_t hi, int *out, char *err,
                     size_t err_len) {
    json_object *v = json_member(obj, key);
    if (!v) return true;
    if (!json_object_is_type(v, json_type_int)) {
        snprintf(err, err_len, "%s = %s: not an integer", key, json_object_to_json_string(v));
        return false;
    }
    int64_t x = json_object_get_int64(v);
    if (x < lo || x > hi) {
        snprintf(err, err_len, "%s = %s: out of range [%lld, %lld]", key,
                 json_object_to_json_string(v), (long long)lo, (long long)hi);
        return false;
    }
    *out = (int)x;
    return true;
}
