/* ${VAR} expansion of path values (see expand.h). */
#include "config/expand.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A '$' that expansion reads: the start of "${" or of "$$". */
static bool special_dollar(const char *p) { return p[0] == '$' && (p[1] == '{' || p[1] == '$'); }

bool config_expand_needed(const char *text) {
    for (const char *p = strchr(text, '$'); p; p = strchr(p + 1, '$'))
        if (special_dollar(p)) return true;
    return false;
}

/* A shell variable's name: a letter or '_', then letters, digits, '_'. */
static bool is_var_name(const char *s, size_t n) {
    if (n == 0 || isdigit((unsigned char)s[0])) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return false;
    return true;
}

/* Appends n bytes of s to out at *o; false when they do not fit. */
static bool append(char *out, size_t len, size_t *o, const char *s, size_t n) {
    if (*o + n >= len) return false;
    memcpy(out + *o, s, n);
    *o += n;
    return true;
}

bool config_expand(const char *text, char *out, size_t len, char *why, size_t why_len) {
    size_t o = 0;
    size_t need = 0; /* the expanded length, counted on after out is full */
    bool fits = true;
    for (const char *p = text; *p;) {
        const char *piece = p;
        size_t n = 1;
        if (p[0] == '$' && p[1] == '$') {
            n = 1; /* one '$' of the two */
            p += 2;
        } else if (p[0] == '$' && p[1] == '{') {
            const char *close = strchr(p + 2, '}');
            if (!close) {
                snprintf(why, why_len,
                         "unterminated '${' (write ${NAME}, or $${ for a literal '${')");
                return false;
            }
            const size_t name_len = (size_t)(close - p - 2);
            if (!is_var_name(p + 2, name_len)) {
                snprintf(why, why_len,
                         "'%.*s' is not a variable name (letters, digits and '_'; write $${ for a "
                         "literal '${')",
                         (int)(name_len < 64 ? name_len : 64), p + 2);
                return false;
            }
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)name_len, p + 2);
            piece = getenv(name);
            if (!piece) {
                snprintf(why, why_len,
                         "environment variable %s is not set (set it where the job starts, and "
                         "under mpirun on other nodes pass it with -x %s; write $${ for a literal "
                         "'${')",
                         name, name);
                return false;
            }
            n = strlen(piece);
            p = close + 1;
        } else {
            p++;
        }
        need += n;
        if (fits) fits = append(out, len, &o, piece, n);
    }
    if (len) out[o] = '\0';
    if (!fits) {
        snprintf(why, why_len, "expands to %zu characters, more than the %zu it may have", need,
                 len ? len - 1 : 0);
        return false;
    }
    return true;
}

void config_expand_escape(const char *text, char *out, size_t len) {
    size_t o = 0;
    for (const char *p = text; *p && o + 1 < len; p++) {
        if (special_dollar(p) && o + 2 < len) out[o++] = '$';
        out[o++] = *p;
    }
    if (len) out[o] = '\0';
}
