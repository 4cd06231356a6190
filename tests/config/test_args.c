/* The trainer's command line (src/config/args.h): each spelling of a setting
 * becomes the same "key=value" override, the flags are found anywhere, and a
 * bad line is refused with a reason naming the argument and the fix. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config/args.h"
#include "expect.h"

#define MAX_ARGS 16

/* Parses the NULL-terminated words after "gpt2_ddp"; why gets the reason. */
static bool parse(config_args *out, char *why, size_t why_len, const char *const *words) {
    char *argv[MAX_ARGS + 1] = {"gpt2_ddp"};
    int argc = 1;
    for (; words[argc - 1] && argc <= MAX_ARGS; argc++) argv[argc] = (char *)words[argc - 1];
    return config_args_parse(argc, argv, out, why, why_len);
}

/* The words parse, to action, config file and overrides joined by ' '. */
static void expect_ok(const char *const *words, config_args_action action, const char *path,
                      const char *overrides) {
    config_args a;
    char why[512], joined[512] = "";
    bool ok = parse(&a, why, sizeof why, words);
    EXPECT(ok, "'%s ...' refused: %s", words[0] ? words[0] : "", why);
    for (int i = 0; ok && i < a.n_overrides; i++)
        snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", i ? " " : "",
                 a.overrides[i]);
    EXPECT(!ok || a.action == action, "'%s ...': action %d, expected %d", words[0], a.action,
           action);
    bool same_path = path ? a.config_path && strcmp(a.config_path, path) == 0 : !a.config_path;
    EXPECT(!ok || same_path, "'%s ...': config '%s', expected '%s'", words[0],
           a.config_path ? a.config_path : "(none)", path ? path : "(none)");
    EXPECT(!ok || strcmp(joined, overrides) == 0, "'%s ...': overrides '%s', expected '%s'",
           words[0], joined, overrides);
    config_args_free(&a);
}

/* The words are refused with a reason containing want. */
static void expect_refused(const char *const *words, const char *want) {
    config_args a;
    char why[512];
    bool ok = parse(&a, why, sizeof why, words);
    EXPECT(!ok, "'%s ...' accepted, expected refused with '%s'", words[0], want);
    EXPECT(ok || strstr(why, want), "'%s ...': reason '%s' lacks '%s'", words[0], why, want);
    config_args_free(&a);
}

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_spellings(void) {
    const char *tiny = "configs/tiny.ini";
    expect_ok(WORDS(tiny, "max_steps=3"), ARGS_RUN, tiny, "max_steps=3");
    expect_ok(WORDS(tiny, "--max_steps=3"), ARGS_RUN, tiny, "max_steps=3");
    expect_ok(WORDS(tiny, "--max_steps", "3"), ARGS_RUN, tiny, "max_steps=3");
    expect_ok(WORDS(tiny, "--max-steps", "3"), ARGS_RUN, tiny, "max_steps=3");
    expect_ok(WORDS("--seed", "-1"), ARGS_RUN, NULL, "seed=-1"); /* the value's check refuses it */
    expect_ok(WORDS("--run_name=a=b", "sample_prompt=x=y"), ARGS_RUN, NULL,
              "run_name=a=b sample_prompt=x=y");
    expect_ok(WORDS("--val_data="), ARGS_RUN, NULL, "val_data=");
    /* A boolean alone is true; the next word is its value only if it is a boolean. */
    expect_ok(WORDS("--save_init"), ARGS_RUN, NULL, "save_init=true");
    expect_ok(WORDS("--save_init", "--lr=1"), ARGS_RUN, NULL, "save_init=true lr=1");
    expect_ok(WORDS("--save_init", "No", "lr=1"), ARGS_RUN, NULL, "save_init=No lr=1");
    expect_ok(WORDS(tiny, "--dry_run", "--save_init=0"), ARGS_RUN, tiny,
              "dry_run=true save_init=0");
}

static void test_flags_anywhere(void) {
    const char *tiny = "configs/tiny.ini";
    expect_ok(WORDS(tiny, "--help"), ARGS_HELP, NULL, "");
    expect_ok(WORDS(tiny, "lr=1", "-h"), ARGS_HELP, NULL, "");
    expect_ok(WORDS("--version", tiny), ARGS_VERSION, NULL, "");
    expect_ok(WORDS("--bogus", "--help"), ARGS_HELP, NULL, ""); /* help wins over an error */
    expect_ok(WORDS(tiny, "--lr=1", "--print-config"), ARGS_PRINT_CONFIG, tiny, "lr=1");
    expect_ok(WORDS("--print-config", tiny, "lr=1"), ARGS_PRINT_CONFIG, tiny, "lr=1");
    expect_ok(WORDS("--print_config"), ARGS_PRINT_CONFIG, NULL, "");
    expect_ok(WORDS("--max_steps=10"), ARGS_RUN, NULL, "max_steps=10");
    config_args a;
    char *argv[] = {"gpt2_ddp", NULL};
    char why[64];
    EXPECT(config_args_parse(1, argv, &a, why, sizeof why) && a.action == ARGS_USAGE,
           "nothing given: expected ARGS_USAGE");
    config_args_free(&a);
}

static void test_refused(void) {
    const char *tiny = "configs/tiny.ini";
    expect_refused(WORDS("--lr_rate=1"), "--lr_rate: unknown key (did you mean '--lr'?)");
    expect_refused(WORDS("--lr_rate", "1"), "--lr_rate: unknown key (did you mean '--lr'?)");
    expect_refused(WORDS("--learning_rate=1e-3"), "did you mean '--lr'?");
    expect_refused(WORDS("--max_iters", "5"), "did you mean '--max_steps'?");
    expect_refused(WORDS("--grad_accum=2"), "--grad_accum: grad_accum is derived");
    expect_refused(WORDS(tiny, "--max_steps"),
                   "--max_steps needs a value (write --max_steps=VALUE, --max_steps VALUE");
    expect_refused(WORDS("--lr", "--max_steps=3"), "--lr needs a value");
    expect_refused(WORDS("-b", "32"), "unknown option '-b'");
    expect_refused(WORDS("--"), "unknown option '--'");
    expect_refused(WORDS("--=3"), "unknown option '--=3'");
    expect_refused(WORDS(tiny, "lr"), "override 'lr' is not key=value");
    expect_refused(WORDS("lr=1", tiny), "'configs/tiny.ini' after settings: a config file comes");
    expect_refused(WORDS("--save_init", tiny), "after settings");
}

int main(void) {
    test_spellings();
    test_flags_anywhere();
    test_refused();
    if (failures) {
        printf("test_args: %d failures\n", failures);
        return 1;
    }
    printf("test_args: OK\n");
    return 0;
}
