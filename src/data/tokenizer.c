/* GPT-2 byte-level BPE (tokenizer.h): loads encoder.json / vocab.bpe into hash
 * tables, splits text with the GPT-2 pattern through PCRE2 (JIT when the
 * library has it), and merges each piece by rank, with a word cache. The
 * merges give what gpt-3-encoder's Encoder.js loop gives, ties and quirks
 * included, through a heap instead of its quadratic rescans. */
#include "data/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <json-c/json.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fail.h"
#include "base/files.h"

/* JavaScript's \s, spelled out: the oracle's regex runs in V8, and PCRE2's
 * Unicode \s differs from it (it adds U+0085 and U+180E, lacks U+FEFF). */
#define JS_SPACE "\\t\\n\\x{0B}\\f\\r\\p{Zs}\\x{2028}\\x{2029}\\x{FEFF}"

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" JS_SPACE "\\p{L}\\p{N}]+"
    "|[" JS_SPACE "]+(?![^" JS_SPACE "])|[" JS_SPACE "]+";

#define MAX_TOKEN_ID (1 << 24)
/* Words longer than this are not cached (rare; they would bloat the cache). */
#define CACHE_MAX_WORD 128
/* The cache is emptied when it grows past this many words, bounding memory
 * on corpora with a long tail of unique words. */
#define CACHE_MAX_ENTRIES (1u << 20)

/* ---- a string -> int64 hash table: open addressing, linear probing; keys
 * are copied into one arena so that slots stay small. */

typedef struct {
    uint64_t hash; /* 0 marks an empty slot */
    size_t key_off;
    size_t key_len;
    int64_t value;
} map_slot;

typedef struct {
    map_slot *slots;
    size_t cap; /* a power of two */
    size_t count;
    char *keys;
    size_t keys_len, keys_cap;
} str_map;

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull; /* murmur3's finalizer */
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Eight bytes per step: keys are words and tokens, mostly under 16 bytes. */
static uint64_t map_hash(const char *key, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, key + i, 8);
        h = mix64(h ^ w);
    }
    w = 0;
    memcpy(&w, key + i, len - i);
    h = mix64(h ^ w);
    return h ? h : 1;
}

static int map_init(str_map *m, size_t cap) {
    memset(m, 0, sizeof *m);
    m->cap = 16;
    while (m->cap < cap) m->cap *= 2;
    m->slots = calloc(m->cap, sizeof *m->slots);
    return m->slots ? 0 : -1;
}

static void map_free(str_map *m) {
    free(m->slots);
    free(m->keys);
    memset(m, 0, sizeof *m);
}

static void map_clear(str_map *m) {
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->count = 0;
    m->keys_len = 0;
}

static map_slot *map_probe(const str_map *m, const char *key, size_t len, uint64_t h) {
    size_t i = (size_t)h & (m->cap - 1);
    for (;;) {
        map_slot *s = &m->slots[i];
        if (s->hash == 0) return s;
        if (s->hash == h && s->key_len == len && memcmp(m->keys + s->key_off, key, len) == 0)
            return s;
        i = (i + 1) & (m->cap - 1);
    }
}

static bool map_find(const str_map *m, const char *key, size_t len, int64_t *value) {
    const map_slot *s = map_probe(m, key, len, map_hash(key, len));
    if (s->hash == 0) return false;
    *value = s->value;
    return true;
}

static int map_grow(str_map *m) {
    str_map bigger = *m;
    bigger.cap = m->cap * 2;
    bigger.slots = calloc(bigger.cap, sizeof *bigger.slots);
    if (!bigger.slots) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        const map_slot *s = &m->slots[i];
        if (s->hash == 0) continue;
        size_t j = (size_t)s->hash & (bigger.cap - 1);
        while (bigger.slots[j].hash != 0) j = (j + 1) & (bigger.cap - 1);
        bigger.slots[j] = *s;
    }
    free(m->slots);
    *m = bigger;
    return 0;
}

/* Inserts or overwrites (a later vocab.bpe line wins, as in Encoder.js). */
static int map_put(str_map *m, const char *key, size_t len, int64_t value) {
    if ((m->count + 1) * 10 > m->cap * 7 && map_grow(m) != 0) return -1;
    uint64_t h = map_hash(key, len);
    map_slot *s = map_probe(m, key, len, h);
    if (s->hash == 0) {
        if (m->keys_len + len > m->keys_cap) {
            size_t cap = m->keys_cap ? m->keys_cap : 4096;
            while (cap < m->keys_len + len) cap *= 2;
            char *keys = realloc(m->keys, cap);
            if (!keys) return -1;
            m->keys = keys;
            m->keys_cap = cap;
        }
        memcpy(m->keys + m->keys_len, key, len);
        s->hash = h;
        s->key_off = m->keys_len;
        s->key_len = len;
        m->keys_len += len;
        m->count++;
    }
    s->value = value;
    return 0;
}

/* ---- WHATWG UTF-8 decoding */

/* Length of the well-formed sequence at s[0] (1..4), or 0 when it is
 * ill-formed; then *bad is the length of its maximal subpart, which the
 * WHATWG decoder turns into one U+FFFD. */
static size_t utf8_sequence_len(const unsigned char *s, size_t avail, size_t *bad) {
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0; /* overlong */
        if (c == 0xED) hi = 0x9F; /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90; /* overlong */
        if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t k = 1; k <= need; k++) {
        if (k >= avail || s[k] < lo || s[k] > hi) {
            *bad = k; /* the offending byte starts the next sequence */
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

/* Offset of the first ill-formed sequence, or len if there is none. */
static size_t utf8_valid_prefix(const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, bad;
    while (i < len) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = utf8_sequence_len(s + i, len - i, &bad);
        if (n == 0) return i;
        i += n;
    }
    return len;
}

/* Writes the sanitized text into out (room for 3 * len bytes: each invalid
 * byte grows to at most EF BF BD) and returns its length. */
static size_t utf8_sanitize_into(const char *text, size_t len, char *out) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, o = 0, bad = 0;
    while (i < len) {
        size_t n = utf8_sequence_len(s + i, len - i, &bad);
        if (n > 0) {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += bad;
        }
    }
    return o;
}

char *tokenizer_sanitize_utf8(const char *text, size_t len, size_t *out_len) {
    char *out = malloc(3 * len + 1);
    if (!out) return NULL;
    *out_len = utf8_sanitize_into(text, len, out);
    out[*out_len] = '\0';
    return out;
}

/* ---- the tokenizer */

/* A candidate merge: the pair of symbols at pos (left_len bytes) and
 * pos + left_len (right_len bytes). Entries go stale when either symbol
 * changes; they are checked when they leave the heap. */
typedef struct {
    int64_t rank;
    uint32_t pos, left_len, right_len;
} pair_entry;

struct bpe_tokenizer {
    str_map encoder; /* token bytes -> id */
    str_map ranks;   /* "first,second" bytes -> merge rank (vocab.bpe line) */
    str_map cache;   /* word bytes -> offset in cache_ids of [count, ids...] */
    int32_t *cache_ids;
    size_t cache_ids_len, cache_ids_cap;
    size_t *id_off; /* id -> its bytes in encoder.keys */
    size_t *id_len; /* SIZE_MAX for an id encoder.json does not define */
    int vocab_size;

    pcre2_code *re;
    pcre2_match_data *match;
    pcre2_match_context *match_ctx;
    pcre2_jit_stack *jit_stack;

    /* scratch, grown as needed */
    char *clean; /* sanitized text, when the input is not valid UTF-8 */
    size_t clean_cap;
    /* BPE state over the bytes of one piece: a symbol is named by the offset
     * of its first byte; sym_len is 0 inside a symbol, and the next symbol
     * starts at offset + sym_len. */
    uint32_t *sym_len, *sym_prev;
    size_t sym_cap;
    pair_entry *heap, *aside;
    size_t heap_len, heap_cap, aside_len, aside_cap;
    uint32_t *batch;
    size_t batch_len, batch_cap;
    char *pair_key;
    size_t pair_key_cap;
    int32_t *word_ids;
    size_t word_ids_cap;

    char error[512];
};

/* GPT-2 stores tokens as printable characters: byte b is U+00b when that is a
 * visible Latin-1 character, otherwise U+0100 + (its index among the others).
 * Fills cp_to_byte (indexed by code point, -1 = not in the alphabet). */
static void byte_alphabet_init(int cp_to_byte[324]) {
    for (int i = 0; i < 324; i++) cp_to_byte[i] = -1;
    int n = 0;
    for (int b = 0; b < 256; b++) {
        bool visible = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        cp_to_byte[visible ? b : 256 + n++] = b;
    }
}

/* Turns a token as spelled in encoder.json / vocab.bpe (UTF-8 of alphabet
 * characters) back into its bytes. out needs len bytes. Returns the byte
 * count, or -1 for a character outside the alphabet. */
static int64_t alphabet_to_bytes(const int cp_to_byte[324], const char *s, size_t len, char *out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        if (u[i] < 0x80) {
            cp = u[i++];
        } else if ((u[i] & 0xE0) == 0xC0 && i + 1 < len) {
            cp = ((uint32_t)(u[i] & 0x1F) << 6) | (u[i + 1] & 0x3F);
            i += 2;
        } else {
            return -1; /* the alphabet ends at U+0143: two bytes suffice */
        }
        if (cp >= 324 || cp_to_byte[cp] < 0) return -1;
        out[o++] = (char)cp_to_byte[cp];
    }
    return (int64_t)o;
}

static char *read_file(const char *path, size_t *len, char *err, size_t err_len) {
    FILE *f = fopen_regular(path, "rb", 0, NULL, 0); /* a FIFO would block the open */
    if (!f) {
        char why[256];
        set_error(err, err_len, "%s: cannot open: %s", path,
                  open_regular_reason(path, errno, why, sizeof why));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    bool failed = ferror(f) != 0;
    fclose(f);
    if (!buf || failed) {
        set_error(err, err_len, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int load_encoder(bpe_tokenizer *tok, const int cp_to_byte[324], const char *path, char *err,
                        size_t err_len) {
    size_t text_len = 0;
    char *text = read_file(path, &text_len, err, err_len);
    if (!text) return -1;
    enum json_tokener_error parse_error = json_tokener_success;
    json_object *root = json_tokener_parse_verbose(text, &parse_error);
    free(text);
    if (!root)
        return set_error(err, err_len, "%s: not valid JSON: %s", path,
                         json_tokener_error_desc(parse_error));
    int rc = -1;
    char *bytes = NULL;
    if (!json_object_is_type(root, json_type_object)) {
        set_error(err, err_len, "%s: expected a JSON object of token -> id", path);
        goto done;
    }
    size_t n = (size_t)json_object_object_length(root);
    if (map_init(&tok->encoder, 2 * n) != 0 || !(bytes = malloc(4096))) {
        set_error(err, err_len, "%s: out of memory", path);
        goto done;
    }
    int64_t max_id = -1;
    struct json_object_iterator it = json_object_iter_begin(root);
    struct json_object_iterator end = json_object_iter_end(root);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *key = json_object_iter_peek_name(&it);
        json_object *val = json_object_iter_peek_value(&it);
        size_t key_len = strlen(key);
        /* Ids index arrays: a bound keeps a typo from allocating gigabytes. */
        if (!json_object_is_type(val, json_type_int) || json_object_get_int64(val) < 0 ||
            json_object_get_int64(val) >= MAX_TOKEN_ID) {
            set_error(err, err_len, "%s: token \"%s\" has no valid id", path, key);
            goto done;
        }
        int64_t id = json_object_get_int64(val);
        if (key_len > 4096) {
            set_error(err, err_len, "%s: token \"%.40s...\" is too long", path, key);
            goto done;
        }
        int64_t nb = alphabet_to_bytes(cp_to_byte, key, key_len, bytes);
        if (nb < 0) {
            set_error(err, err_len, "%s: token \"%s\" is not in GPT-2's byte alphabet", path, key);
            goto done;
        }
        if (map_put(&tok->encoder, bytes, (size_t)nb, id) != 0) {
            set_error(err, err_len, "%s: out of memory", path);
            goto done;
        }
        max_id = id > max_id ? id : max_id;
    }
    tok->vocab_size = (int)(max_id + 1);
    rc = 0;
done:
    free(bytes);
    json_object_put(root);
    return rc;
}

/* id -> bytes, pointing into the encoder's key arena (final once loaded). */
static int index_ids(bpe_tokenizer *tok, const char *path, char *err, size_t err_len) {
    size_t n = (size_t)tok->vocab_size;
    tok->id_off = malloc((n ? n : 1) * sizeof *tok->id_off);
    tok->id_len = malloc((n ? n : 1) * sizeof *tok->id_len);
    if (!tok->id_off || !tok->id_len) return set_error(err, err_len, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) tok->id_len[i] = SIZE_MAX;
    for (size_t i = 0; i < tok->encoder.cap; i++) {
        const map_slot *s = &tok->encoder.slots[i];
        if (s->hash == 0) continue;
        if (tok->id_len[s->value] != SIZE_MAX)
            return set_error(err, err_len, "%s: id %lld is given to two tokens", path,
                             (long long)s->value);
        tok->id_off[s->value] = s->key_off;
        tok->id_len[s->value] = s->key_len;
    }
    return 0;
}

/* Splits one vocab.bpe line into its whitespace-separated fields, in place. */
static int split_fields(char *line, char *fields[], int max_fields) {
    int n = 0;
    char *save = NULL;
    for (char *f = strtok_r(line, " \t\r\f\v", &save); f; f = strtok_r(NULL, " \t\r\f\v", &save)) {
        if (n == max_fields) return max_fields + 1;
        fields[n++] = f;
    }
    return n;
}

/* Like Encoder.js: the first line (#version) and the text after the last
 * newline are not merges; merge rank = index among the remaining lines. The
 * key is "first,second" in bytes (',' is its own alphabet character). */
static int load_merges(bpe_tokenizer *tok, const int cp_to_byte[324], const char *path, char *err,
                       size_t err_len) {
    size_t len = 0;
    char *text = read_file(path, &len, err, err_len);
    if (!text) return -1;
    int rc = -1;
    char *key = malloc(len + 2);
    if (!key || map_init(&tok->ranks, 131072) != 0) {
        set_error(err, err_len, "%s: out of memory", path);
        goto done;
    }
    if (strncmp(text, "#version", 8) != 0) {
        set_error(err, err_len, "%s: first line is not '#version: ...': not a vocab.bpe file",
                  path);
        goto done;
    }
    char *line = strchr(text, '\n');
    int64_t rank = 0;
    for (int64_t line_no = 2; line; line_no++, rank++) {
        line++;
        char *next = strchr(line, '\n');
        if (!next) break; /* the text after the last newline */
        *next = '\0';
        char *fields[3];
        if (split_fields(line, fields, 2) != 2) {
            set_error(err, err_len, "%s:%lld: expected two tokens separated by a space", path,
                      (long long)line_no);
            goto done;
        }
        int64_t a = alphabet_to_bytes(cp_to_byte, fields[0], strlen(fields[0]), key);
        int64_t b =
            a < 0 ? -1 : alphabet_to_bytes(cp_to_byte, fields[1], strlen(fields[1]), key + a + 1);
        if (a < 0 || b < 0) {
            set_error(err, err_len, "%s:%lld: token not in GPT-2's byte alphabet", path,
                      (long long)line_no);
            goto done;
        }
        key[a] = ',';
        if (map_put(&tok->ranks, key, (size_t)(a + 1 + b), rank) != 0) {
            set_error(err, err_len, "%s: out of memory", path);
            goto done;
        }
        line = next;
    }
    rc = 0;
done:
    free(key);
    free(text);
    return rc;
}

static int compile_pattern(bpe_tokenizer *tok, char *err, size_t err_len) {
    int code = 0;
    PCRE2_SIZE where = 0;
    tok->re = pcre2_compile((PCRE2_SPTR)gpt2_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                            &code, &where, NULL);
    if (!tok->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return set_error(err, err_len, "pcre2_compile of the GPT-2 pattern failed at %zu: %s",
                         (size_t)where, (const char *)msg);
    }
    /* JIT is an optimisation: without it (no JIT support) pcre2_match
     * interprets the same pattern. The JIT stack is sized for long matches
     * (a megabyte-long run of spaces is one piece). */
    if (pcre2_jit_compile(tok->re, PCRE2_JIT_COMPLETE) == 0) {
        tok->jit_stack = pcre2_jit_stack_create(32 * 1024, 16 * 1024 * 1024, NULL);
    }
    tok->match = pcre2_match_data_create_from_pattern(tok->re, NULL);
    tok->match_ctx = pcre2_match_context_create(NULL);
    if (!tok->match || !tok->match_ctx) return set_error(err, err_len, "out of memory");
    if (tok->jit_stack) pcre2_jit_stack_assign(tok->match_ctx, NULL, tok->jit_stack);
    return 0;
}

bpe_tokenizer *tokenizer_load(const char *encoder_json, const char *vocab_bpe, char *err,
                              size_t err_len) {
    bpe_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        set_error(err, err_len, "out of memory");
        return NULL;
    }
    int cp_to_byte[324];
    byte_alphabet_init(cp_to_byte);
    if (load_encoder(tok, cp_to_byte, encoder_json, err, err_len) != 0 ||
        index_ids(tok, encoder_json, err, err_len) != 0 ||
        load_merges(tok, cp_to_byte, vocab_bpe, err, err_len) != 0 ||
        compile_pattern(tok, err, err_len) != 0) {
        tokenizer_free(tok);
        return NULL;
    }
    if (map_init(&tok->cache, 1 << 16) != 0) {
        set_error(err, err_len, "out of memory");
        tokenizer_free(tok);
        return NULL;
    }
    return tok;
}

void tokenizer_free(bpe_tokenizer *tok) {
    if (!tok) return;
    map_free(&tok->encoder);
    map_free(&tok->ranks);
    map_free(&tok->cache);
    free(tok->cache_ids);
    free(tok->id_off);
    free(tok->id_len);
    pcre2_match_data_free(tok->match);
    pcre2_match_context_free(tok->match_ctx);
    if (tok->jit_stack) pcre2_jit_stack_free(tok->jit_stack);
    pcre2_code_free(tok->re);
    free(tok->clean);
    free(tok->sym_len);
    free(tok->sym_prev);
    free(tok->heap);
    free(tok->aside);
    free(tok->batch);
    free(tok->pair_key);
    free(tok->word_ids);
    free(tok);
}

int tokenizer_vocab_size(const bpe_tokenizer *tok) { return tok->vocab_size; }

const char *tokenizer_last_error(const bpe_tokenizer *tok) { return tok->error; }

const char *tokenizer_token_bytes(const bpe_tokenizer *tok, int32_t id, size_t *len) {
    if (id < 0 || id >= tok->vocab_size || tok->id_len[id] == SIZE_MAX) return NULL;
    *len = tok->id_len[id];
    return tok->encoder.keys + tok->id_off[id];
}

char *tokenizer_decode(const bpe_tokenizer *tok, const int32_t *ids, size_t n, size_t *len) {
    size_t total = 0, piece = 0;
    for (size_t i = 0; i < n; i++) {
        if (!tokenizer_token_bytes(tok, ids[i], &piece)) return NULL;
        total += piece;
    }
    char *out = malloc(total + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *bytes = tokenizer_token_bytes(tok, ids[i], &piece);
        memcpy(out + o, bytes, piece);
        o += piece;
    }
    out[o] = '\0';
    *len = o;
    return out;
}

/* ---- encoding */

static int grow(void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *p = realloc(*buf, c * elem);
    if (!p) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

static int scratch_reserve(bpe_tokenizer *tok, size_t n_bytes) {
    if (n_bytes > tok->sym_cap) {
        size_t c = n_bytes < 64 ? 64 : n_bytes;
        uint32_t *len = realloc(tok->sym_len, c * sizeof *len);
        if (len) tok->sym_len = len;
        uint32_t *prev = realloc(tok->sym_prev, c * sizeof *prev);
        if (prev) tok->sym_prev = prev;
        if (!len || !prev) return -1;
        tok->sym_cap = c;
    }
    if (grow((void **)&tok->pair_key, &tok->pair_key_cap, n_bytes + 1, 1) != 0) return -1;
    return grow((void **)&tok->word_ids, &tok->word_ids_cap, n_bytes, sizeof(int32_t));
}

/* Heap order: lowest rank first; between equal ranks the rightmost pair,
 * which is the one Encoder.js picks (minPairs keeps the last pair per rank). */
static bool entry_before(const pair_entry *a, const pair_entry *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos > b->pos;
}

static int heap_push(bpe_tokenizer *tok, pair_entry e) {
    if (grow((void **)&tok->heap, &tok->heap_cap, tok->heap_len + 1, sizeof e) != 0) return -1;
    size_t i = tok->heap_len++;
    while (i > 0 && entry_before(&e, &tok->heap[(i - 1) / 2])) {
        tok->heap[i] = tok->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    tok->heap[i] = e;
    return 0;
}

static pair_entry heap_pop(bpe_tokenizer *tok) {
    pair_entry top = tok->heap[0], last = tok->heap[--tok->heap_len];
    size_t i = 0, n = tok->heap_len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_before(&tok->heap[c + 1], &tok->heap[c])) c++;
        if (!entry_before(&tok->heap[c], &last)) break;
        tok->heap[i] = tok->heap[c];
        i = c;
    }
    if (n > 0) tok->heap[i] = last;
    return top;
}

/* Rank of the pair (symbol at pos, the symbol after it), looked up by
 * "first,second" as Encoder.js does (bpe_ranks[pair] stringifies the pair);
 * unranked pairs are not queued. */
static int queue_pair(bpe_tokenizer *tok, const char *word, size_t n, uint32_t pos) {
    uint32_t a = tok->sym_len[pos];
    if ((size_t)pos + a >= n) return 0;
    uint32_t b = tok->sym_len[pos + a];
    memcpy(tok->pair_key, word + pos, a);
    tok->pair_key[a] = ',';
    memcpy(tok->pair_key + a + 1, word + pos + a, b);
    int64_t rank;
    if (!map_find(&tok->ranks, tok->pair_key, (size_t)a + 1 + b, &rank)) return 0;
    return heap_push(tok, (pair_entry){rank, pos, a, b});
}

static bool entry_current(const bpe_tokenizer *tok, size_t n, const pair_entry *e) {
    return tok->sym_len[e->pos] == e->left_len && (size_t)e->pos + e->left_len < n &&
           tok->sym_len[e->pos + e->left_len] == e->right_len;
}

static bool entry_same_pair(const char *word, const pair_entry *a, const pair_entry *b) {
    return a->left_len == b->left_len && a->right_len == b->right_len &&
           memcmp(word + a->pos, word + b->pos, (size_t)a->left_len + a->right_len) == 0;
}

static int compare_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Takes every current occurrence of top's pair off the heap into tok->batch
 * (sorted by position); other pairs of the same rank (possible only through
 * the "first,second" spelling) go back. */
static int collect_batch(bpe_tokenizer *tok, const char *word, size_t n, const pair_entry *top) {
    tok->batch_len = tok->aside_len = 0;
    if (grow((void **)&tok->batch, &tok->batch_cap, 1, sizeof *tok->batch) != 0) return -1;
    tok->batch[tok->batch_len++] = top->pos;
    while (tok->heap_len > 0 && tok->heap[0].rank == top->rank) {
        pair_entry e = heap_pop(tok);
        if (!entry_current(tok, n, &e)) continue;
        if (entry_same_pair(word, &e, top)) {
            if (grow((void **)&tok->batch, &tok->batch_cap, tok->batch_len + 1,
                     sizeof *tok->batch) != 0)
                return -1;
            tok->batch[tok->batch_len++] = e.pos;
        } else {
            if (grow((void **)&tok->aside, &tok->aside_cap, tok->aside_len + 1, sizeof e) != 0)
                return -1;
            tok->aside[tok->aside_len++] = e;
        }
    }
    for (size_t i = 0; i < tok->aside_len; i++)
        if (heap_push(tok, tok->aside[i]) != 0) return -1;
    qsort(tok->batch, tok->batch_len, sizeof *tok->batch, compare_u32);
    return 0;
}

/* One Encoder.js pass: the pair's occurrences merge left to right, an
 * occurrence whose left symbol was just taken by the previous one is skipped
 * ("aaa" with (a, a) gives "aa" "a"), then the new symbols' pairs are queued. */
static int merge_batch(bpe_tokenizer *tok, const char *word, size_t n, uint32_t left_len,
                       uint32_t right_len) {
    size_t merged = 0;
    for (size_t i = 0; i < tok->batch_len; i++) {
        uint32_t p = tok->batch[i];
        if (tok->sym_len[p] != left_len || (size_t)p + left_len >= n ||
            tok->sym_len[p + left_len] != right_len)
            continue; /* taken by the previous merge, or a duplicate entry */
        uint32_t q = p + left_len, after = q + right_len;
        tok->sym_len[p] = left_len + right_len;
        tok->sym_len[q] = 0;
        if (after < n) tok->sym_prev[after] = p;
        tok->batch[merged++] = p;
    }
    for (size_t i = 0; i < merged; i++) {
        uint32_t p = tok->batch[i];
        if (tok->sym_len[p] == 0) continue;
        if (p > 0 && queue_pair(tok, word, n, tok->sym_prev[p]) != 0) return -1;
        if (queue_pair(tok, word, n, p) != 0) return -1;
    }
    return 0;
}

/* BPE of one pre-tokenized piece into tok->word_ids; returns the id count or
 * -1. Same result as Encoder.js's loop (lowest rank first, all occurrences of
 * that pair per pass), in O(n log n) through a heap of candidate pairs, so
 * that a megabyte-long piece takes a second, not hours. */
static int64_t bpe_word(bpe_tokenizer *tok, const char *word, size_t n) {
    if (n >= UINT32_MAX || scratch_reserve(tok, n) != 0) {
        set_error(tok->error, sizeof tok->error, "out of memory in BPE (a %zu-byte piece)", n);
        return -1;
    }
    tok->heap_len = 0;
    for (size_t i = 0; i < n; i++) {
        tok->sym_len[i] = 1;
        tok->sym_prev[i] = (uint32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < n; i++)
        if (queue_pair(tok, word, n, (uint32_t)i) != 0) goto oom;
    while (tok->heap_len > 0) {
        pair_entry top = heap_pop(tok);
        if (!entry_current(tok, n, &top)) continue;
        if (collect_batch(tok, word, n, &top) != 0 ||
            merge_batch(tok, word, n, top.left_len, top.right_len) != 0)
            goto oom;
    }
    int64_t count = 0;
    for (size_t p = 0; p < n; p += tok->sym_len[p]) {
        int64_t id;
        if (!map_find(&tok->encoder, word + p, tok->sym_len[p], &id)) {
            set_error(tok->error, sizeof tok->error,
                      "BPE produced a symbol of %u bytes that encoder.json lacks", tok->sym_len[p]);
            return -1;
        }
        tok->word_ids[count++] = (int32_t)id;
    }
    return count;
oom:
    set_error(tok->error, sizeof tok->error, "out of memory in BPE (a %zu-byte piece)", n);
    return -1;
}

static int append_ids(int32_t **ids, size_t *n, size_t *cap, const int32_t *src, size_t count) {
    if (grow((void **)ids, cap, *n + count, sizeof **ids) != 0) return -1;
    memcpy(*ids + *n, src, count * sizeof *src);
    *n += count;
    return 0;
}

/* Remembers a word's ids; empties the cache first when it is full. */
static void cache_store(bpe_tokenizer *tok, const char *word, size_t len, const int32_t *ids,
                        size_t count) {
    if (tok->cache.count >= CACHE_MAX_ENTRIES) {
        map_clear(&tok->cache);
        tok->cache_ids_len = 0;
    }
    size_t off = tok->cache_ids_len;
    if (grow((void **)&tok->cache_ids, &tok->cache_ids_cap, off + 1 + count,
             sizeof *tok->cache_ids) != 0)
        return; /* the cache is an optimisation: skip it when memory is short */
    if (map_put(&tok->cache, word, len, (int64_t)off) != 0) return;
    tok->cache_ids[off] = (int32_t)count;
    memcpy(tok->cache_ids + off + 1, ids, count * sizeof *ids);
    tok->cache_ids_len = off + 1 + count;
}

static int encode_piece(bpe_tokenizer *tok, const char *word, size_t len, int32_t **ids, size_t *n,
                        size_t *cap) {
    int64_t off;
    if (len <= CACHE_MAX_WORD && map_find(&tok->cache, word, len, &off)) {
        const int32_t *hit = tok->cache_ids + off;
        if (append_ids(ids, n, cap, hit + 1, (size_t)hit[0]) == 0) return 0;
        set_error(tok->error, sizeof tok->error, "out of memory for token ids");
        return -1;
    }
    int64_t count = bpe_word(tok, word, len);
    if (count < 0) return -1;
    if (len <= CACHE_MAX_WORD) cache_store(tok, word, len, tok->word_ids, (size_t)count);
    if (append_ids(ids, n, cap, tok->word_ids, (size_t)count) == 0) return 0;
    set_error(tok->error, sizeof tok->error, "out of memory for token ids");
    return -1;
}

/* The text as the oracle sees it: valid input is used in place. */
static const char *clean_text(bpe_tokenizer *tok, const char *text, size_t *len) {
    if (utf8_valid_prefix(text, *len) == *len) return text;
    if (grow((void **)&tok->clean, &tok->clean_cap, 3 * *len + 1, 1) != 0) return NULL;
    *len = utf8_sanitize_into(text, *len, tok->clean);
    return tok->clean;
}

int tokenizer_encode(bpe_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n,
                     size_t *cap) {
    tok->error[0] = '\0';
    const char *s = clean_text(tok, text, &len);
    if (!s) return set_error(tok->error, sizeof tok->error, "out of memory for UTF-8 repair");
    size_t off = 0;
    while (off < len) {
        int rc = pcre2_match(tok->re, (PCRE2_SPTR)s, len, off, PCRE2_NO_UTF_CHECK, tok->match,
                             tok->match_ctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return set_error(tok->error, sizeof tok->error, "pcre2_match at byte %zu: %s", off,
                             (const char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(tok->match);
        /* Text the pattern skips is dropped, as JavaScript's matchAll does;
         * the pattern covers every character, so nothing is skipped. */
        if (ov[1] == ov[0]) {
            off = ov[1] + 1;
            while (off < len && ((unsigned char)s[off] & 0xC0) == 0x80) off++;
            continue;
        }
        if (encode_piece(tok, s + ov[0], ov[1] - ov[0], ids, n, cap) != 0) return -1;
        off = ov[1];
    }
    return 0;
}
