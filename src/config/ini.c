/* The INI reader (see ini.h): lines are split in place into key and value,
 * so a read allocates only the line buffer and the current section's name. */
#include "config/ini.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/files.h"
#include "config/elide.h"

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
    return s;
}

/* A comment starts at '#' or ';' preceded by whitespace, so that values such
 * as "runs/a#3" keep their characters. s is the text right after '='. */
static char *find_comment(char *s) {
    for (char *p = s; *p; p++)
        if ((*p == '#' || *p == ';') && p > s && (p[-1] == ' ' || p[-1] == '\t')) return p;
    return NULL;
}

static bool is_name(const char *s, const char *extra) {
    if (!*s) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && !strchr(extra, *s)) return false;
    return true;
}

static bool is_blank_or_comment(const char *s) {
    while (*s == ' ' || *s == '\t') s++;
    return *s == '\0' || *s == '#' || *s == ';';
}

/* "[name]": only its form is checked; the name is left in *name. */
static bool split_section(char *s, char **name, char *why, size_t why_len) {
    char *close = strchr(s, ']');
    if (close) {
        *close = '\0';
        *name = trim(s + 1);
        if (is_name(*name, ".-") && is_blank_or_comment(close + 1)) return true;
        *close = ']'; /* the message shows the line as written */
    }
    char shown[ELIDE_KEEP + 40];
    elide(s, shown, sizeof shown);
    snprintf(why, why_len, "malformed section header '%s' (expected '[name]')", shown);
    return false;
}

/* The value after '=': "quoted" with \" and \\ escapes, or bare text,
 * trimmed, up to a comment where comments may follow (a file's line). */
static bool split_value(char *s, bool comments, char **value, char *why, size_t why_len) {
    char *v = s;
    while (*v == ' ' || *v == '\t') v++;
    if (*v != '"') {
        char *comment = comments ? find_comment(s) : NULL;
        if (comment) *comment = '\0';
        *value = trim(s);
        return true;
    }
    char *src = v + 1, *dst = v;
    for (; *src != '"'; src++) {
        if (*src == '\0')
            return snprintf(why, why_len, "unterminated quoted value (no closing \")"), false;
        if (*src == '\\' && (src[1] == '"' || src[1] == '\\')) src++;
        *dst++ = *src;
    }
    *dst = '\0'; /* dst < src: the rest of the line is untouched */
    const char *rest = src + 1;
    while (*rest == ' ' || *rest == '\t') rest++;
    if (*rest != '\0' && !(comments && is_blank_or_comment(rest))) {
        char shown[ELIDE_KEEP + 40];
        elide(src + 1, shown, sizeof shown);
        snprintf(why, why_len, "unexpected text after the closing quote: '%s'", shown);
        return false;
    }
    *value = v;
    return true;
}

typedef enum { LINE_BLANK, LINE_SECTION, LINE_KEY_VALUE, LINE_ERROR } line_kind;

/* "key = value" at s, split in place; comments: whether the value may end
 * at a comment (a file's line) or not (a command-line override). */
static line_kind split_key_value(char *s, bool comments, char **key, char **value, char *why,
                                 size_t why_len) {
    char shown[ELIDE_KEEP + 40];
    char *eq = strchr(s, '=');
    if (!eq) {
        elide(s, shown, sizeof shown);
        snprintf(why, why_len, "expected 'key = value' or '[section]', got '%s'", shown);
        return LINE_ERROR;
    }
    *eq = '\0';
    *key = trim(s);
    if (**key == '\0') {
        snprintf(why, why_len, "missing key before '='");
        return LINE_ERROR;
    }
    if (!is_name(*key, "")) {
        elide(*key, shown, sizeof shown);
        snprintf(why, why_len, "'%s' is not a key name (expected 'key = value')", shown);
        return LINE_ERROR;
    }
    return split_value(eq + 1, comments, value, why, why_len) ? LINE_KEY_VALUE : LINE_ERROR;
}

/* Splits one line of a file in place: a section's name goes to *key, a
 * key/value to *key and *value. */
static line_kind split_line(char *line, char **key, char **value, char *why, size_t why_len) {
    char *s = trim(line); /* also drops "\r\n" */
    if (*s == '\0' || *s == '#' || *s == ';') return LINE_BLANK;
    if (*s == '[') return split_section(s, key, why, why_len) ? LINE_SECTION : LINE_ERROR;
    return split_key_value(s, true, key, value, why, why_len);
}

/* Fills err (when there is one) and returns its status. */
static ini_status error_at(ini_error *err, ini_status status, ini_source where, int stop,
                           const char *message) {
    if (err) {
        err->where = where;
        err->stop = stop;
        snprintf(err->message, sizeof err->message, "%s", message);
    }
    return status;
}

ini_status ini_read_stream(FILE *f, const char *path, ini_key_fn on_key, void *ctx,
                           ini_error *err) {
    ini_source where = {path, 0};
    ini_status status = INI_OK;
    char *line = NULL, *section_buf = NULL; /* getline reuses line: the section is copied */
    size_t line_cap = 0, section_cap = 0;
    const char *section = "";
    errno = 0;
    ssize_t got;
    while (status == INI_OK && (got = getline(&line, &line_cap, f)) >= 0) {
        where.line++;
        char *text = line, *key = NULL, *value = NULL, why[INI_MESSAGE_MAX];
        if (memchr(line, '\0', (size_t)got)) { /* the rest of the line would vanish unseen */
            status = error_at(err, INI_SYNTAX_ERROR, where, 0,
                              "a NUL byte in the line (a binary file, or a damaged one?)");
            break;
        }
        if (where.line == 1 && strncmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3; /* UTF-8 BOM */
        line_kind kind = split_line(text, &key, &value, why, sizeof why);
        if (kind == LINE_ERROR) status = error_at(err, INI_SYNTAX_ERROR, where, 0, why);
        if (kind == LINE_SECTION) {
            size_t n = strlen(key) + 1;
            section_buf = xgrow(section_buf, &section_cap, n, 1, "INI section name");
            section = memcpy(section_buf, key, n);
        }
        if (kind == LINE_KEY_VALUE) {
            ini_entry entry = {section, key, value, where};
            int stop = on_key(ctx, &entry);
            if (stop) status = error_at(err, INI_STOPPED, where, stop, "");
        }
        errno = 0;
    }
    int read_errno = errno;
    if (status == INI_OK && ferror(f)) /* a directory opens but fails to read (EISDIR) */
        status = error_at(err, INI_IO_ERROR, (ini_source){path, 0}, 0, strerror(read_errno));
    free(line);
    free(section_buf);
    return status;
}

ini_status ini_read_file(const char *path, ini_key_fn on_key, void *ctx, ini_error *err) {
    /* A FIFO would block the open until something writes it, and then be
     * read by one rank only: refused, as a directory is. */
    FILE *f = fopen_regular(path, "r", 0, NULL, 0);
    if (!f) {
        char why[INI_MESSAGE_MAX];
        return error_at(err, INI_IO_ERROR, (ini_source){path, 0}, 0,
                        open_regular_reason(path, errno, why, sizeof why));
    }
    ini_status status = ini_read_stream(f, path, on_key, ctx, err);
    fclose(f);
    return status;
}

ini_status ini_read_override(const char *text, ini_key_fn on_key, void *ctx, ini_error *err) {
    const ini_source where = {NULL, 0};
    if (!strchr(text, '=')) return error_at(err, INI_NOT_KEY_VALUE, where, 0, "not key=value");
    size_t n = strlen(text) + 1;
    char *copy = xmalloc(n), *key = NULL, *value = NULL, why[INI_MESSAGE_MAX];
    memcpy(copy, text, n); /* split_line works in place */
    ini_status status = INI_OK;
    /* No comments on a command line: "run_name=exp #2" keeps its "#2". */
    line_kind kind = split_key_value(copy, false, &key, &value, why, sizeof why);
    if (kind == LINE_ERROR) {
        status = error_at(err, INI_SYNTAX_ERROR, where, 0, why);
    } else {
        ini_entry entry = {"", key, value, where};
        int stop = on_key(ctx, &entry);
        if (stop) status = error_at(err, INI_STOPPED, where, stop, "");
    }
    free(copy);
    return status;
}
