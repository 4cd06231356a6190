/* Every numeric key of the key table (src/config/keys.c) against the
 * values users get wrong: trailing junk, a number past its C type, a
 * negative where the key starts at 0 or more, NaN and infinities. Each must
 * be refused with the reason that fits (not an integer / not a number /
 * out of range naming the limit / not a finite number), never stored. And
 * ${VAR} expansion (src/config/expand.h): variables, "$$", the errors, and
 * the escape that reads back as the same text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/elide.h"
#include "config/expand.h"
#include "config/keys.h"
#include "config/values.h"
#include "expect.h"

static bool is_numeric(const config_key *k) {
    return k->type == KEY_INT || k->type == KEY_INT64 || k->type == KEY_UINT64 ||
           k->type == KEY_DOUBLE;
}

/* Sets text on a copy of the defaults; the reason must contain want. */
static void expect_refused(const config *defaults, const config_key *k, const char *text,
                           const char *want) {
    config cfg = *defaults;
    char why[512] = "";
    const bool ok = config_key_set(&cfg, k, text, why, sizeof why);
    EXPECT(!ok, "%s = %s: accepted, expected refused (%s)", k->name, text, want);
    EXPECT(strstr(why, want) != NULL, "%s = %s: reason '%s', expected it to contain '%s'", k->name,
           text, why, want);
    EXPECT(memcmp((const char *)&cfg + k->offset, (const char *)defaults + k->offset, k->size) == 0,
           "%s = %s: the refused value changed the field", k->name, text);
}

static void test_numeric_keys(void) {
    config defaults;
    config_load(&defaults, NULL, 0, NULL);
    int numeric = 0;
    for (size_t i = 0; i < config_n_keys; i++) {
        const config_key *k = &config_keys[i];
        if (!is_numeric(k)) continue;
        numeric++;
        const bool integer = k->type != KEY_DOUBLE;
        const char *not_number = integer ? "not an integer" : "not a number";
        expect_refused(&defaults, k, "12x", not_number);
        expect_refused(&defaults, k, "1 2", not_number);
        expect_refused(&defaults, k, "abc", not_number);
        expect_refused(&defaults, k, "", "empty value");
        /* Past the C type: the reason is a range that names the limit. */
        if (k->type == KEY_INT) {
            expect_refused(&defaults, k, "2147483648", "out of range: must be");
            expect_refused(&defaults, k, "-2147483649", "out of range: must be");
            if (!k->range.on || k->range.hi > 2147483647.0)
                expect_refused(&defaults, k, "2147483648", "2147483647]");
        } else if (k->type == KEY_INT64 || k->type == KEY_UINT64) {
            expect_refused(&defaults, k, "99999999999999999999", "out of range: must be");
        } else {
            expect_refused(&defaults, k, "1e999", "out of range: beyond the largest double");
            expect_refused(&defaults, k, "-1e999", "out of range: beyond the largest double");
        }
        /* NaN and infinities: not finite for floats, not integers at all. */
        const char *nan_reason = integer ? "not an integer" : "not a finite number";
        expect_refused(&defaults, k, "nan", nan_reason);
        expect_refused(&defaults, k, "inf", nan_reason);
        expect_refused(&defaults, k, "-inf", nan_reason);
        /* Negative where the key starts at 0 or more. */
        if (k->type == KEY_UINT64) expect_refused(&defaults, k, "-1", "not an integer");
        if (k->range.on && k->range.lo >= 0) expect_refused(&defaults, k, "-1", "out of range");
    }
    EXPECT(numeric >= 30, "only %d numeric keys found", numeric);
    printf("numeric keys: %d, each refused for junk, overflow, NaN/inf, negatives\n", numeric);

    /* The exact text of the case the issue reported. */
    const config_key *w = config_key_find("warmup_steps");
    char why[512];
    config cfg = defaults;
    EXPECT(w && !config_key_set(&cfg, w, "2147483648", why, sizeof why), "warmup_steps accepted");
    EXPECT(strcmp(why, "out of range: must be in [0, 2147483647] (2147483647: the largest 32-bit "
                       "integer)") == 0,
           "warmup_steps = 2147483648: '%s'", why);
    const config_key *o = config_key_find("out_dir");
    char long_value[700];
    memset(long_value, 'a', 600);
    long_value[600] = '\0';
    EXPECT(o && !config_key_set(&cfg, o, long_value, why, sizeof why), "600-char out_dir accepted");
    EXPECT(strcmp(why, "too long: 600 characters, out_dir holds at most 511") == 0,
           "600-char out_dir: '%s'", why);
}

static void expect_expands(const char *text, const char *want) {
    char out[CONFIG_STR_MAX], why[512] = "";
    const bool ok = config_expand(text, out, sizeof out, why, sizeof why);
    EXPECT(ok && strcmp(out, want) == 0, "expand '%s': got %s '%s' (%s), expected '%s'", text,
           ok ? "ok" : "error", ok ? out : "", why, want);
    /* The escape reads back as the same text. */
    char escaped[2 * CONFIG_STR_MAX], back[CONFIG_STR_MAX];
    config_expand_escape(want, escaped, sizeof escaped);
    EXPECT(config_expand(escaped, back, sizeof back, why, sizeof why) && strcmp(back, want) == 0,
           "escape of '%s' is '%s', which expands to '%s'", want, escaped, back);
}

static void expect_expand_error(const char *text, const char *want) {
    char out[64], why[512] = "";
    EXPECT(!config_expand(text, out, sizeof out, why, sizeof why), "expand '%s': accepted", text);
    EXPECT(strstr(why, want) != NULL, "expand '%s': reason '%s', expected '%s'", text, why, want);
}

static void test_expand(void) {
    setenv("GPT2_T_JOB", "4242", 1);
    setenv("GPT2_T_EMPTY", "", 1);
    setenv("GPT2_T_DOLLAR", "a${b}$$c", 1);
    expect_expands("/scratch/${GPT2_T_JOB}/x", "/scratch/4242/x");
    expect_expands("${GPT2_T_JOB}${GPT2_T_JOB}", "42424242");
    expect_expands("a${GPT2_T_EMPTY}b", "ab");
    expect_expands("cost$5 $ a$", "cost$5 $ a$"); /* a '$' before no '{' or '$' stays */
    expect_expands("$${GPT2_T_JOB}", "${GPT2_T_JOB}");
    expect_expands("a$$b$$$$", "a$b$$");
    expect_expands("${GPT2_T_DOLLAR}", "a${b}$$c"); /* a variable's value is not expanded again */
    EXPECT(!config_expand_needed("plain/$path"), "'plain/$path' needs no expansion");
    EXPECT(config_expand_needed("x${Y}") && config_expand_needed("x$$"), "expansion needed");
    unsetenv("GPT2_T_UNSET");
    expect_expand_error("/x/${GPT2_T_UNSET}/y", "environment variable GPT2_T_UNSET is not set");
    expect_expand_error("/x/${GPT2_T_JOB", "unterminated '${'");
    expect_expand_error("${}", "'' is not a variable name");
    expect_expand_error("${1A}", "'1A' is not a variable name");
    expect_expand_error("${A-B}", "'A-B' is not a variable name");
    char big[100];
    memset(big, 'x', 60);
    snprintf(big + 60, sizeof big - 60, "${GPT2_T_JOB}");
    expect_expand_error(big, "expands to 64 characters, more than the 63 it may have");
}

static void test_elide(void) {
    char s[1000], out[ELIDE_KEEP + 40];
    memset(s, 'a', ELIDE_KEEP);
    s[ELIDE_KEEP] = '\0';
    elide(s, out, sizeof out);
    EXPECT(strcmp(out, s) == 0, "text of %d characters is kept whole", ELIDE_KEEP);
    memset(s, 'b', 999);
    s[0] = 'S', s[998] = 'E', s[999] = '\0';
    elide(s, out, sizeof out);
    EXPECT(out[0] == 'S' && out[strlen(out) - 1] == 'E' &&
               strstr(out, "...(887 more characters)...") && strlen(out) < ELIDE_KEEP + 40,
           "999 characters shown as '%s'", out);
}

int main(void) {
    test_numeric_keys();
    test_expand();
    test_elide();
    if (failures) {
        printf("test_config_values: %d failures\n", failures);
        return 1;
    }
    printf("test_config_values: OK\n");
    return 0;
}
