/* JSON text to json-c objects, with errors that say where and what: the
 * strict RFC 8259 grammar (no comments, trailing commas or leading zeros),
 * UTF-8 checked (on request), and nothing but whitespace after the value.
 * Shared by the safetensors header, Hugging Face's config.json and JSONL
 * corpora. */
#ifndef GPT2_IO_JSON_UTIL_H
#define GPT2_IO_JSON_UTIL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses text[0, len) (no NUL needed); NULL with "not valid JSON at byte K:
 * reason" in err. check_utf8 refuses invalid UTF-8; without it such bytes
 * pass into strings as they are. The caller json_object_put()s the result. */
json_object *json_parse_text(const char *text, size_t len, bool check_utf8, char *err,
                             size_t err_len);

/* Reads and parses the file at path; NULL with "path: problem" in err. */
json_object *json_read_file(const char *path, char *err, size_t err_len);

/* The member key of object obj when it exists and is not null. */
json_object *json_member(json_object *obj, const char *key);

/* Reads member key as an int in [lo, hi] into *out: true when it is absent
 * or null (out unchanged), or valid; false with "key: problem" in err. */
bool json_member_int(json_object *obj, const char *key, int64_t lo, int64_t hi, int *out, char *err,
                     size_t err_len);
#endif
