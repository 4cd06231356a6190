/* The INI reader (src/config/ini.h) on in-memory streams, temp files and
 * overrides: every entry's section, key, value and line, and for bad syntax
 * the exact status, line and message (the trainer prints these messages, and
 * tests/config/CMakeLists.txt checks some of them through the binary). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/ini.h"
#include "expect.h"

#define MAX_ENTRIES 32

/* What the callback saw, copied: the reader's strings live only during the call. */
typedef struct {
    char section[64], key[64], value[256];
    const char *path;
    int line;
} record;

typedef struct {
    record got[MAX_ENTRIES];
    int n;
    int stop_at; /* 1-based entry at which the callback returns stop_with (0: never) */
    int stop_with;
} collector;

static int collect(void *ctx, const ini_entry *e) {
    collector *c = ctx;
    if (c->n < MAX_ENTRIES) {
        record *r = &c->got[c->n];
        snprintf(r->section, sizeof r->section, "%s", e->section);
        snprintf(r->key, sizeof r->key, "%s", e->key);
        snprintf(r->value, sizeof r->value, "%s", e->value);
        r->path = e->where.path;
        r->line = e->where.line;
    }
    c->n++;
    return c->n == c->stop_at ? c->stop_with : 0;
}

/* Reads text as the file "mem.ini" (fmemopen keeps every byte: BOM, "\r", no final newline). */
static ini_status read_text(const char *text, collector *c, ini_error *err) {
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    if (!f) {
        EXPECT(false, "fmemopen failed");
        return INI_IO_ERROR;
    }
    ini_status status = ini_read_stream(f, "mem.ini", collect, c, err);
    fclose(f);
    return status;
}

static void expect_entry(const collector *c, int i, const char *section, const char *key,
                         const char *value, int line, const char *what) {
    if (i >= c->n) {
        EXPECT(false, "%s: entry %d missing (got %d)", what, i, c->n);
        return;
    }
    const record *r = &c->got[i];
    EXPECT(strcmp(r->section, section) == 0, "%s: entry %d section '%s', expected '%s'", what, i,
           r->section, section);
    EXPECT(strcmp(r->key, key) == 0, "%s: entry %d key '%s', expected '%s'", what, i, r->key, key);
    EXPECT(strcmp(r->value, value) == 0, "%s: entry %d value '%s', expected '%s'", what, i,
           r->value, value);
    EXPECT(r->line == line, "%s: entry %d line %d, expected %d", what, i, r->line, line);
}

/* Every accepted form, with its exact result. */
static void test_good_syntax(void) {
    /* Line numbers on the right; the BOM, "\r\n" and the missing final newline are on purpose. */
    const char *text = "\xEF\xBB\xBF# a comment\r\n"                                     /* 1 */
                       "; another comment\n"                                             /* 2 */
                       "\n"                                                              /* 3 */
                       "   \t \n"                                                        /* 4 */
                       "top = before any section\n"                                      /* 5 */
                       "[model]   ; sections only group keys\n"                          /* 6 */
                       "n_layer=3\r\n"                                                   /* 7 */
                       "\tn_embd   =   96    # trailing comment\n"                       /* 8 */
                       "[ any_name.is-fine ]\n"                                          /* 9 */
                       "path = runs/a#1;b.bin   # '#' and ';' after no space are kept\n" /* 10 */
                       "quoted = \"  spaced # not ; a comment \"   # after\n"            /* 11 */
                       "escapes = \"q\\\"and\\\\b\\x\"\n"                                /* 12 */
                       "empty_quoted = \"\"\n"                                           /* 13 */
                       "empty =\n"                                                       /* 14 */
                       "semi = a ;b\n"                                                   /* 15 */
                       "Key_2 = v=w\n"                                                   /* 16 */
                       "last = no newline";                                              /* 17 */
    collector c = {0};
    ini_error err = {0};
    ini_status status = read_text(text, &c, &err);
    EXPECT(status == INI_OK, "good syntax: status %d (%s at line %d)", status, err.message,
           err.where.line);
    EXPECT(c.n == 11, "good syntax: %d entries, expected 11", c.n);
    const char *w = "good syntax";
    expect_entry(&c, 0, "", "top", "before any section", 5, w);
    expect_entry(&c, 1, "model", "n_layer", "3", 7, w);
    expect_entry(&c, 2, "model", "n_embd", "96", 8, w);
    expect_entry(&c, 3, "any_name.is-fine", "path", "runs/a#1;b.bin", 10, w);
    expect_entry(&c, 4, "any_name.is-fine", "quoted", "  spaced # not ; a comment ", 11, w);
    /* \" and \\ are escapes; any other backslash stays. */
    expect_entry(&c, 5, "any_name.is-fine", "escapes", "q\"and\\b\\x", 12, w);
    expect_entry(&c, 6, "any_name.is-fine", "empty_quoted", "", 13, w);
    expect_entry(&c, 7, "any_name.is-fine", "empty", "", 14, w);
    expect_entry(&c, 8, "any_name.is-fine", "semi", "a", 15, w);
    expect_entry(&c, 9, "any_name.is-fine", "Key_2", "v=w", 16, w);
    expect_entry(&c, 10, "any_name.is-fine", "last", "no newline", 17, w);
    for (int i = 0; i < c.n && i < MAX_ENTRIES; i++)
        EXPECT(c.got[i].path && strcmp(c.got[i].path, "mem.ini") == 0, "entry %d path '%s'", i,
               c.got[i].path ? c.got[i].path : "(null)");
    /* The empty stream and a lone BOM give no entries at all. */
    collector none = {0};
    EXPECT(read_text("", &none, NULL) == INI_OK && none.n == 0, "empty: %d entries", none.n);
    EXPECT(read_text("\xEF\xBB\xBF", &none, NULL) == INI_OK && none.n == 0, "BOM only: %d", none.n);
}

/* One bad line after a good one: the good one is delivered, then the error
 * names the bad line; nothing after it is read. */
static void expect_syntax_error(const char *bad_line, const char *message) {
    char text[1024];
    snprintf(text, sizeof text, "ok = 1\n%s\nafter = 2\n", bad_line);
    collector c = {0};
    ini_error err = {0};
    ini_status status = read_text(text, &c, &err);
    EXPECT(status == INI_SYNTAX_ERROR, "'%s': status %d, expected INI_SYNTAX_ERROR", bad_line,
           status);
    EXPECT(strcmp(err.message, message) == 0, "'%s': message\n  got      '%s'\n  expected '%s'",
           bad_line, err.message, message);
    EXPECT(err.where.line == 2 && err.where.path && strcmp(err.where.path, "mem.ini") == 0,
           "'%s': error at %s:%d, expected mem.ini:2", bad_line,
           err.where.path ? err.where.path : "(null)", err.where.line);
    EXPECT(c.n == 1, "'%s': %d entries delivered, expected 1 (the line before)", bad_line, c.n);
}

static void test_bad_syntax(void) {
    expect_syntax_error("n_layer 2", "expected 'key = value' or '[section]', got 'n_layer 2'");
    expect_syntax_error("  n_layer 2  \r",
                        "expected 'key = value' or '[section]', got 'n_layer 2'");
    expect_syntax_error(" = 5", "missing key before '='");
    expect_syntax_error("n layer = 5", "'n layer' is not a key name (expected 'key = value')");
    expect_syntax_error("n-layer = 5", "'n-layer' is not a key name (expected 'key = value')");
    expect_syntax_error("[model", "malformed section header '[model' (expected '[name]')");
    expect_syntax_error("[model] junk",
                        "malformed section header '[model] junk' (expected '[name]')");
    expect_syntax_error("[]", "malformed section header '[]' (expected '[name]')");
    expect_syntax_error("[a]]", "malformed section header '[a]]' (expected '[name]')");
    expect_syntax_error("run_name = \"abc", "unterminated quoted value (no closing \")");
    expect_syntax_error("run_name = \"ab\\\"", "unterminated quoted value (no closing \")");
    expect_syntax_error("run_name = \"abc\" junk",
                        "unexpected text after the closing quote: ' junk'");
    expect_syntax_error("run_name = \"abc\"x", "unexpected text after the closing quote: 'x'");
    /* A BOM is skipped on the first line only. */
    expect_syntax_error("\xEF\xBB\xBFn_layer = 2",
                        "'\xEF\xBB\xBFn_layer' is not a key name (expected 'key = value')");

    /* A long line is shown by its start and end, so the message stays whole. */
    char text[2048];
    memset(text, 'x', 1500);
    text[1500] = '\0';
    collector c = {0};
    ini_error err = {0};
    EXPECT(read_text(text, &c, &err) == INI_SYNTAX_ERROR, "long line: not a syntax error");
    char want[INI_MESSAGE_MAX];
    snprintf(want, sizeof want,
             "expected 'key = value' or '[section]', got '%.80s...(1388 more characters)...%.32s'",
             text, text);
    EXPECT(strcmp(err.message, want) == 0, "long line: message\n  got      '%s'\n  expected '%s'",
           err.message, want);
    /* The same for a long key name and a long text after a closing quote. */
    memset(text, 'k', 600);
    snprintf(text + 600, sizeof text - 600, "! = 1");
    collector c2 = {0};
    EXPECT(read_text(text, &c2, &err) == INI_SYNTAX_ERROR, "long key: not a syntax error");
    EXPECT(strstr(err.message, "more characters)...") &&
               strstr(err.message, "k!' is not a key name (expected 'key = value')"),
           "long key: message '%s'", err.message);
}

/* A NUL byte would end the line for every string function after getline:
 * "n_layer = 2\0junk" must not read as n_layer = 2. */
static void test_nul_byte(void) {
    static const char text[] = "n_layer = 2\0junk = x\n";
    FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
    EXPECT(f != NULL, "fmemopen failed");
    if (!f) return;
    collector c = {0};
    ini_error err = {0};
    ini_status status = ini_read_stream(f, "mem.ini", collect, &c, &err);
    fclose(f);
    EXPECT(status == INI_SYNTAX_ERROR, "NUL byte: status %d, not a syntax error", (int)status);
    EXPECT(c.n == 0, "NUL byte: %d entries read before the error", c.n);
    EXPECT(strstr(err.message, "a NUL byte in the line") != NULL, "NUL byte: message '%s'",
           err.message);
}

static void test_callback_stops(void) {
    collector c = {.stop_at = 2, .stop_with = 7};
    ini_error err = {0};
    ini_status status = read_text("a = 1\n\nb = 2\nc = 3\n", &c, &err);
    EXPECT(status == INI_STOPPED, "stop: status %d, expected INI_STOPPED", status);
    EXPECT(err.stop == 7, "stop: err.stop %d, expected 7", err.stop);
    EXPECT(err.where.line == 3, "stop: at line %d, expected 3", err.where.line);
    EXPECT(strcmp(err.message, "") == 0, "stop: message '%s', expected empty", err.message);
    EXPECT(c.n == 2, "stop: %d entries, expected 2 (none after the stop)", c.n);
}

/* Real files: a good one (BOM and CRLF as an editor on Windows writes them),
 * a missing one and a directory. */
static void test_files(void) {
    char dir[] = "/tmp/test_ini_XXXXXX";
    if (!mkdtemp(dir)) {
        EXPECT(false, "mkdtemp failed");
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/good.ini", dir);
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL, "cannot write %s", path);
    if (f) {
        fputs("\xEF\xBB\xBF[train]\r\nlr = 6e-4\r\n\r\nrun_name = \"a b\"\r\n", f);
        fclose(f);
    }
    collector c = {0};
    ini_error err = {0};
    ini_status status = ini_read_file(path, collect, &c, &err);
    EXPECT(status == INI_OK, "file: status %d (%s)", status, err.message);
    EXPECT(c.n == 2, "file: %d entries, expected 2", c.n);
    expect_entry(&c, 0, "train", "lr", "6e-4", 2, "file");
    expect_entry(&c, 1, "train", "run_name", "a b", 4, "file");
    EXPECT(c.n >= 1 && c.got[0].path == path, "file: entries name the path passed in");

    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing.ini", dir);
    collector none = {0};
    status = ini_read_file(missing, collect, &none, &err);
    EXPECT(status == INI_IO_ERROR, "missing file: status %d, expected INI_IO_ERROR", status);
    EXPECT(strcmp(err.message, "No such file or directory") == 0, "missing file: message '%s'",
           err.message);
    EXPECT(err.where.path == missing && err.where.line == 0, "missing file: where %d",
           err.where.line);

    /* A directory, and a FIFO without a writer (whose open would block
     * forever): refused before any read. */
    status = ini_read_file(dir, collect, &none, &err);
    EXPECT(status == INI_IO_ERROR, "directory: status %d, expected INI_IO_ERROR", status);
    EXPECT(strcmp(err.message, "a directory, not a regular file") == 0, "directory: message '%s'",
           err.message);
    EXPECT(none.n == 0, "directory: %d entries", none.n);
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/fifo.ini", dir);
    unlink(fifo);
    EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    status = ini_read_file(fifo, collect, &none, &err);
    EXPECT(status == INI_IO_ERROR, "FIFO: status %d, expected INI_IO_ERROR", status);
    EXPECT(strcmp(err.message, "a FIFO (named pipe), not a regular file") == 0,
           "FIFO: message '%s'", err.message);
    unlink(fifo);
    EXPECT(ini_read_file(missing, collect, &none, NULL) == INI_IO_ERROR, "err NULL: status");

    unlink(path);
    rmdir(dir);
}

static void expect_override(const char *text, ini_status want, const char *key, const char *value,
                            const char *message) {
    collector c = {0};
    ini_error err = {0};
    ini_status status = ini_read_override(text, collect, &c, &err);
    EXPECT(status == want, "override '%s': status %d, expected %d", text, status, want);
    if (want == INI_OK) {
        EXPECT(c.n == 1, "override '%s': %d entries, expected 1", text, c.n);
        expect_entry(&c, 0, "", key, value, 0, text);
        EXPECT(c.n < 1 || c.got[0].path == NULL, "override '%s': path not NULL", text);
    } else {
        EXPECT(c.n == 0, "override '%s': %d entries, expected none", text, c.n);
        EXPECT(strcmp(err.message, message) == 0, "override '%s': message '%s', expected '%s'",
               text, err.message, message);
        EXPECT(err.where.path == NULL && err.where.line == 0, "override '%s': where", text);
    }
}

static void test_overrides(void) {
    expect_override("lr=0.1", INI_OK, "lr", "0.1", NULL);
    expect_override("  lr =  0.1  ", INI_OK, "lr", "0.1", NULL);
    expect_override("run_name=\"a \\\"q\\\" x\"", INI_OK, "run_name", "a \"q\" x", NULL);
    /* No comments on a command line: '#' and ';' after a space are kept. */
    expect_override("prompt=a;b # c", INI_OK, "prompt", "a;b # c", NULL);
    expect_override("run_name=exp #2", INI_OK, "run_name", "exp #2", NULL);
    expect_override("sample_prompt=Hello # world", INI_OK, "sample_prompt", "Hello # world", NULL);
    expect_override("x= a ; b ", INI_OK, "x", "a ; b", NULL);
    expect_override("x=\"q # r\"  ", INI_OK, "x", "q # r", NULL);
    expect_override("x=\"q\" # r", INI_SYNTAX_ERROR, NULL, NULL,
                    "unexpected text after the closing quote: ' # r'");
    expect_override("val_data=", INI_OK, "val_data", "", NULL);
    expect_override("lr", INI_NOT_KEY_VALUE, NULL, NULL, "not key=value");
    expect_override("", INI_NOT_KEY_VALUE, NULL, NULL, "not key=value");
    expect_override("# a=b", INI_SYNTAX_ERROR, NULL, NULL,
                    "'# a' is not a key name (expected 'key = value')");
    expect_override("[x] ; a=b", INI_SYNTAX_ERROR, NULL, NULL,
                    "'[x] ; a' is not a key name (expected 'key = value')");
    expect_override("=5", INI_SYNTAX_ERROR, NULL, NULL, "missing key before '='");
    expect_override("[x]=3", INI_SYNTAX_ERROR, NULL, NULL,
                    "'[x]' is not a key name (expected 'key = value')");
    expect_override("run_name=\"a", INI_SYNTAX_ERROR, NULL, NULL,
                    "unterminated quoted value (no closing \")");
    expect_override("n layer=3", INI_SYNTAX_ERROR, NULL, NULL,
                    "'n layer' is not a key name (expected 'key = value')");

    collector c = {.stop_at = 1, .stop_with = -1};
    ini_error err = {0};
    const char *text = "lr=0.1";
    EXPECT(ini_read_override(text, collect, &c, &err) == INI_STOPPED && err.stop == -1,
           "override stop: status or stop %d", err.stop);
    EXPECT(strcmp(text, "lr=0.1") == 0, "override: the argument is left as it was");
    EXPECT(ini_read_override("lr", collect, &c, NULL) == INI_NOT_KEY_VALUE, "err NULL: status");
}

int main(void) {
    test_good_syntax();
    test_bad_syntax();
    test_nul_byte();
    test_callback_stops();
    test_files();
    test_overrides();
    if (failures) {
        printf("test_ini: %d failures\n", failures);
        return 1;
    }
    printf("test_ini: OK\n");
    return 0;
}
