/* A generic INI reader: "key = value" lines, [section] headers, comments, and
 * one "key=value" from a command line in the same syntax but without
 * comments. It knows nothing
 * about which keys exist: it hands each key/value to a callback with where it
 * came from, and returns syntax errors as a status with a message, so that
 * the caller decides how to report them (and a test can check them).
 *
 * Syntax, line by line:
 *   - a UTF-8 byte order mark before the first line is skipped; "\r\n" ends
 *     a line like "\n";
 *   - blank lines and lines starting with '#' or ';' (after spaces) are
 *     comments;
 *   - "[name]": a section, name of letters, digits, '_', '.', '-', followed
 *     only by spaces or a comment;
 *   - "key = value": key of letters, digits and '_'; the value is trimmed
 *     and ends at a '#' or ';' that follows a space or tab (so "a#1" keeps
 *     its '#'), or is "quoted" with \" and \\ as escapes, keeping every
 *     other character, followed only by spaces or a comment. */
#ifndef GPT2_CONFIG_INI_H
#define GPT2_CONFIG_INI_H

#include <stdio.h>

/* Where a key/value came from: a line of a file, or a command-line override
 * (path NULL, line 0). */
typedef struct {
    const char *path;
    int line; /* 1-based */
} ini_source;

/* One key/value. The strings live until the callback returns. */
typedef struct {
    const char *section; /* the last [section] above it, "" before any */
    const char *key;
    const char *value; /* unquoted, escapes resolved */
    ini_source where;
} ini_entry;

typedef enum {
    INI_OK = 0,
    INI_IO_ERROR,      /* the file cannot be opened or read: message is strerror's */
    INI_SYNTAX_ERROR,  /* a malformed line: message says what is wrong, where names it */
    INI_NOT_KEY_VALUE, /* an override that is no "key=value" (a comment, a [section]) */
    INI_STOPPED,       /* the callback returned non-zero for the entry at where */
} ini_status;

/* Syntax messages are cut to this many bytes, terminator included. */
#define INI_MESSAGE_MAX 512

typedef struct {
    ini_source where; /* the line of a syntax error, or the entry the callback stopped at */
    int stop;         /* INI_STOPPED: what the callback returned */
    char message[INI_MESSAGE_MAX]; /* without the source; empty for INI_STOPPED */
} ini_error;

/* Called once per key/value in file order; returns 0 to go on, anything else
 * to stop the read (the reader then returns INI_STOPPED). */
typedef int (*ini_key_fn)(void *ctx, const ini_entry *entry);

/* Reads the file at path (INI_IO_ERROR for a missing file or a directory).
 * err may be NULL. */
ini_status ini_read_file(const char *path, ini_key_fn on_key, void *ctx, ini_error *err);

/* Reads an open stream to its end; path names it in the entries' sources. */
ini_status ini_read_stream(FILE *f, const char *path, ini_key_fn on_key, void *ctx, ini_error *err);

/* Reads one command-line override "key=value" with the syntax of a file's
 * key/value line but no comment: the value is everything after the first
 * '=', trimmed ("run_name=exp #2" keeps "exp #2"), or "quoted" as in a file
 * with nothing but spaces after the closing quote. Calls on_key once (source
 * path NULL). Text without '=' is INI_NOT_KEY_VALUE; a [section] or comment
 * is a syntax error (not a key name). */
ini_status ini_read_override(const char *text, ini_key_fn on_key, void *ctx, ini_error *err);
#endif
