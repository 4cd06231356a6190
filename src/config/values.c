/* Values of keys as text (see values.h): parsing by key type with errors
 * that say what is wrong, range checks, and exact formatting. */
#include "config/values.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/expand.h"

static void *field(config *cfg, const config_key *k) { return (char *)cfg + k->offset; }
static const void *cfield(const config *cfg, const config_key *k) {
    return (const char *)cfg + k->offset;
}

/* ------------------------------------------------------- values as text */

/* The shortest %g text that reads back as exactly v, so that printed
 * configs are readable ("0.0006", not "0.00059999999999999995") and exact.
 * Tried in a local buffer (17 digits fit): with strtod(buf), UBSan's check
 * of strtod's nonnull argument gave GCC 12 a path with buf NULL and a false
 * "null destination pointer" warning (an error under -Werror). */
static void format_double(double v, char *buf, size_t len) {
    char text[32];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, v);
        if (strtod(text, NULL) == v) break;
    }
    snprintf(buf, len, "%s", text);
}

/* Strings that the parser would trim or cut at a comment are quoted. */
static bool string_needs_quotes(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1])) return true;
    return strpbrk(s, "#;\"\\") != NULL;
}

static void format_string(const char *s, bool quote, char *buf, size_t len) {
    if (!quote || !string_needs_quotes(s)) {
        snprintf(buf, len, "%s", s);
        return;
    }
    size_t o = 0;
    if (o + 1 < len) buf[o++] = '"';
    for (; *s && o + 3 < len; s++) {
        if (*s == '"' || *s == '\\') buf[o++] = '\\';
        buf[o++] = *s;
    }
    if (o + 1 < len) buf[o++] = '"';
    buf[o] = '\0';
}

void config_key_format(const config *cfg, const config_key *k, bool quote, char *buf, size_t len) {
    const void *p = cfield(cfg, k);
    switch (k->type) {
    case KEY_INT: snprintf(buf, len, "%d", *(const int *)p); break;
    case KEY_INT64: snprintf(buf, len, "%" PRId64, *(const int64_t *)p); break;
    case KEY_UINT64: snprintf(buf, len, "%" PRIu64, *(const uint64_t *)p); break;
    case KEY_DOUBLE: format_double(*(const double *)p, buf, len); break;
    case KEY_BOOL: snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false"); break;
    case KEY_STRING:
        if (quote && k->path) { /* what config_expand reads back as this value */
            char escaped[2 * CONFIG_STR_MAX];
            config_expand_escape((const char *)p, escaped, sizeof escaped);
            format_string(escaped, quote, buf, len);
            break;
        }
        format_string((const char *)p, quote, buf, len);
        break;
    case KEY_ENUM: format_string((const char *)p, quote, buf, len); break;
    }
}

/* "in [1, 1024]", "in (0, 10]" or ">= 0". */
static void format_range(const key_range *r, char *buf, size_t len) {
    if (isinf(r->hi))
        snprintf(buf, len, "%s %.15g", r->lo_open ? ">" : ">=", r->lo);
    else
        snprintf(buf, len, "in %c%.15g, %.15g%c", r->lo_open ? '(' : '[', r->lo, r->hi,
                 r->hi_open ? ')' : ']');
}

static void format_choices(const char *const *choices, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (const char *const *c = choices; *c && o < len; c++)
        o += snprintf(buf + o, len - o, "%s%s", c == choices ? "" : ", ", *c);
}

void config_value_quote(const char *s, char *buf, size_t len) { format_string(s, true, buf, len); }

void config_key_allowed(const config_key *k, char *buf, size_t len) {
    buf[0] = '\0';
    if (k->type == KEY_ENUM) format_choices(k->choices, buf, len);
    if (k->range.on) format_range(&k->range, buf, len);
}

/* --------------------------------------------------------- parsing values */

typedef enum { NUM_OK, NUM_BAD, NUM_OVERFLOW, NUM_NOT_FINITE } num_status;

static num_status parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return NUM_BAD;
    if (errno == ERANGE || v < lo || v > hi) return NUM_OVERFLOW;
    *out = v;
    return NUM_OK;
}

static num_status parse_uint64(const char *s, uint64_t *out) {
    if (!isdigit((unsigned char)s[0])) return NUM_BAD; /* strtoull would wrap "-1" */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0') return NUM_BAD;
    if (errno == ERANGE) return NUM_OVERFLOW;
    *out = v;
    return NUM_OK;
}

/* NUM_NOT_FINITE: "nan", "inf" as written; NUM_OVERFLOW: 1e999. */
static num_status parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0') return NUM_BAD;
    if (errno == ERANGE && isinf(v)) return NUM_OVERFLOW;
    if (!isfinite(v)) return NUM_NOT_FINITE;
    *out = v;
    return NUM_OK;
}

bool config_parse_bool(const char *s, bool *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = true, true;
        if (strcasecmp(s, no[i]) == 0) return *out = false, true;
    }
    return false;
}

bool config_key_check(const config *cfg, const config_key *k, char *why, size_t why_len) {
    const void *p = cfield(cfg, k);
    double v = 0;
    switch (k->type) {
    case KEY_INT: v = *(const int *)p; break;
    case KEY_INT64: v = (double)*(const int64_t *)p; break;
    case KEY_DOUBLE: v = *(const double *)p; break;
    case KEY_STRING:
        if (!memchr(p, '\0', k->size)) return snprintf(why, why_len, "not terminated"), false;
        return true;
    case KEY_ENUM:
        for (const char *const *c = k->choices; *c; c++)
            if (strcmp(p, *c) == 0) return true;
        char list[256];
        format_choices(k->choices, list, sizeof list);
        snprintf(why, why_len, "must be one of %s", list);
        return false;
    case KEY_UINT64:
    case KEY_BOOL: return true;
    }
    const key_range *r = &k->range;
    if (!r->on) return true;
    bool low = r->lo_open ? v <= r->lo : v < r->lo;
    bool high = r->hi_open ? v >= r->hi : v > r->hi;
    if (!low && !high) return true;
    char range[128];
    format_range(r, range, sizeof range);
    snprintf(why, why_len, "out of range: must be %s", range);
    return false;
}

/* Why a number too large for its type is refused: the range the key
 * allows, capped by the type, so that "warmup_steps = 2147483648" names the
 * largest int rather than only the key's lower bound. */
static void overflow_reason(const config_key *k, char *why, size_t why_len) {
    if (k->type == KEY_DOUBLE) {
        snprintf(why, why_len, "out of range: beyond the largest double (about 1.8e308)");
        return;
    }
    if (k->type == KEY_UINT64) {
        snprintf(why, why_len, "out of range: must be in [0, %" PRIu64 "] (a 64-bit unsigned key)",
                 UINT64_MAX);
        return;
    }
    const bool is_int = k->type == KEY_INT;
    const double type_lo = is_int ? INT_MIN : (double)INT64_MIN;
    const double type_hi = is_int ? INT_MAX : (double)INT64_MAX;
    const key_range *r = &k->range;
    if (r->on && !isinf(r->hi) && r->hi <= type_hi && r->lo >= type_lo) {
        char range[128];
        format_range(r, range, sizeof range);
        snprintf(why, why_len, "out of range: must be %s", range);
        return;
    }
    /* The bound that binds is the type's: print the integers exactly. */
    const long long lo =
        r->on && r->lo > type_lo ? (long long)r->lo : (is_int ? INT_MIN : INT64_MIN);
    const long long hi = is_int ? INT_MAX : INT64_MAX;
    snprintf(why, why_len,
             "out of range: must be in [%lld, %lld] (%lld: the largest %d-bit integer)",
             lo + (r->on && r->lo_open ? 1 : 0), hi, hi, is_int ? 32 : 64);
}

bool config_key_set(config *cfg, const config_key *k, const char *text, char *why, size_t why_len) {
    void *p = field(cfg, k);
    unsigned char before[sizeof(double)]; /* a numeric field, restored when out of range */
    if (k->size <= sizeof before) memcpy(before, p, k->size);
    num_status st = NUM_OK;
    if (text[0] == '\0' && k->type != KEY_STRING) {
        snprintf(why, why_len, "empty value");
        return false;
    }
    switch (k->type) {
    case KEY_INT: {
        int64_t v = 0;
        st = parse_int64(text, INT_MIN, INT_MAX, &v);
        if (st == NUM_OK) *(int *)p = (int)v;
        break;
    }
    case KEY_INT64: st = parse_int64(text, INT64_MIN, INT64_MAX, (int64_t *)p); break;
    case KEY_UINT64: st = parse_uint64(text, (uint64_t *)p); break;
    case KEY_DOUBLE: st = parse_double(text, (double *)p); break;
    case KEY_BOOL:
        if (!config_parse_bool(text, (bool *)p))
            return snprintf(why, why_len, "not a boolean (use true/false, yes/no, 1/0)"), false;
        return true;
    case KEY_STRING:
        if (strlen(text) >= k->size)
            return snprintf(why, why_len, "too long: %zu characters, %s holds at most %zu",
                            strlen(text), k->name, k->size - 1),
                   false;
        memcpy(p, text, strlen(text) + 1);
        return true;
    case KEY_ENUM:
        /* Case-insensitive, stored as the canonical spelling. */
        for (const char *const *c = k->choices; *c; c++)
            if (strcasecmp(text, *c) == 0) return memcpy(p, *c, strlen(*c) + 1), true;
        char list[256];
        format_choices(k->choices, list, sizeof list);
        return snprintf(why, why_len, "must be one of %s", list), false;
    }
    if (st == NUM_BAD) {
        bool integer = k->type != KEY_DOUBLE;
        snprintf(why, why_len, "%s", integer ? "not an integer" : "not a number");
        return false;
    }
    if (st == NUM_NOT_FINITE) return snprintf(why, why_len, "not a finite number"), false;
    if (st == NUM_OVERFLOW) return overflow_reason(k, why, why_len), false;
    if (config_key_check(cfg, k, why, why_len)) return true;
    memcpy(p, before, k->size); /* a refused value is not kept */
    return false;
}
