/* Threads that tokenize document batches in order (see encode_pool.h). */
#include "data/encode_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "data/tokenizer.h"
#include "io/json_util.h"

struct encode_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done, loaded;
    /* Submitted batches in order, a ring of `depth` slots: [head, tail) are
     * outstanding, [claimed, tail) not yet taken by a thread. head and tail
     * change on the main thread only, claimed under mu. */
    doc_batch **ring;
    size_t depth, head, claimed, tail;
    bool stopping;
    int n_threads, n_loaded;
    pthread_t *threads;
    const char *encoder_json, *vocab_bpe, *field;
    char load_error[1024];
};

/* The text of a JSONL document: its string field, or an error naming the
 * line and what is there instead. obj holds the parsed line (put it after use). */
static const char *jsonl_text(const doc_batch *b, const doc_ref *d, const char *field,
                              json_object **obj, size_t *len, char *err, size_t err_len) {
    char why[512];
    *obj = json_parse_text(b->bytes + d->off, d->len, false, why, sizeof why);
    if (!*obj) {
        snprintf(err, err_len, "%s:%lld: %s", d->path, (long long)d->line, why);
        return NULL;
    }
    if (!json_object_is_type(*obj, json_type_object)) {
        snprintf(err, err_len, "%s:%lld: not a JSON object (a JSONL line holds one document)",
                 d->path, (long long)d->line);
        return NULL;
    }
    json_object *v = NULL;
    if (!json_object_object_get_ex(*obj, field, &v)) {
        char keys[256] = "";
        size_t o = 0;
        json_object_object_foreach(*obj, key, value) {
            (void)value;
            if (o < sizeof keys)
                o += snprintf(keys + o, sizeof keys - o, "%s\"%s\"", o ? ", " : "", key);
        }
        snprintf(err, err_len,
                 "%s:%lld: no \"%s\" field (the line has %s; choose one with --jsonl-field)",
                 d->path, (long long)d->line, field, o ? keys : "no fields");
        return NULL;
    }
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(err, err_len, "%s:%lld: \"%s\" is %s, not a string", d->path, (long long)d->line,
                 field, json_object_to_json_string(v));
        return NULL;
    }
    *len = (size_t)json_object_get_string_len(v);
    return json_object_get_string(v);
}

/* Tokenizes every document of b; stops at the first that fails. */
static void encode_batch(bpe_tokenizer *tok, const char *field, doc_batch *b) {
    b->ends = xgrow(b->ends, &b->ends_cap, b->n_docs + 1, sizeof *b->ends, "token ids");
    for (size_t i = 0; i < b->n_docs; i++) {
        const doc_ref *d = &b->docs[i];
        json_object *obj = NULL;
        const char *text = b->bytes + d->off;
        size_t len = d->len;
        if (d->json && !(text = jsonl_text(b, d, field, &obj, &len, b->error, sizeof b->error))) {
            json_object_put(obj);
            return;
        }
        int rc = tokenizer_encode(tok, text, len, &b->ids, &b->n_ids, &b->ids_cap);
        json_object_put(obj);
        if (rc != 0 && d->json) {
            snprintf(b->error, sizeof b->error, "%s:%lld: %s", d->path, (long long)d->line,
                     tokenizer_last_error(tok));
            return;
        }
        if (rc != 0) {
            snprintf(b->error, sizeof b->error, "%s: %s", d->path, tokenizer_last_error(tok));
            return;
        }
        b->ends[i] = b->n_ids;
    }
}

static void *worker(void *arg) {
    encode_pool *p = arg;
    char err[1024];
    bpe_tokenizer *tok = tokenizer_load(p->encoder_json, p->vocab_bpe, err, sizeof err);
    pthread_mutex_lock(&p->mu);
    if (!tok && !p->load_error[0]) snprintf(p->load_error, sizeof p->load_error, "%s", err);
    p->n_loaded++;
    pthread_cond_broadcast(&p->loaded);
    for (;;) {
        while (!p->stopping && p->claimed == p->tail) pthread_cond_wait(&p->work, &p->mu);
        if (p->stopping || !tok) break;
        doc_batch *b = p->ring[p->claimed++ % p->depth];
        pthread_mutex_unlock(&p->mu);
        encode_batch(tok, p->field, b);
        pthread_mutex_lock(&p->mu);
        b->done = true;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    tokenizer_free(tok);
    return NULL;
}

encode_pool *encode_pool_start(int n_threads, int depth, const char *encoder_json,
                               const char *vocab_bpe, const char *field, char *err,
                               size_t err_len) {
    encode_pool *p = xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    pthread_cond_init(&p->loaded, NULL);
    p->depth = (size_t)(depth > 0 ? depth : 1);
    p->ring = xcalloc(p->depth, sizeof *p->ring);
    p->encoder_json = encoder_json, p->vocab_bpe = vocab_bpe, p->field = field;
    p->threads = xcalloc((size_t)n_threads, sizeof *p->threads);
    for (; p->n_threads < n_threads; p->n_threads++)
        if (pthread_create(&p->threads[p->n_threads], NULL, worker, p) != 0)
            FAIL("cannot start tokenizer thread %d of %d", p->n_threads + 1, n_threads);
    pthread_mutex_lock(&p->mu);
    while (p->n_loaded < p->n_threads) pthread_cond_wait(&p->loaded, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (p->load_error[0]) {
        snprintf(err, err_len, "%s", p->load_error);
        encode_pool_stop(p);
        return NULL;
    }
    return p;
}

void encode_pool_submit(encode_pool *p, doc_batch *b) {
    CHECK(p->tail - p->head < p->depth, "encode pool: more than %zu batches outstanding", p->depth);
    b->done = false;
    b->error[0] = '\0';
    b->n_ids = 0;
    pthread_mutex_lock(&p->mu);
    p->ring[p->tail++ % p->depth] = b;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

doc_batch *encode_pool_next(encode_pool *p) {
    if (p->head == p->tail) return NULL;
    doc_batch *b = p->ring[p->head % p->depth];
    pthread_mutex_lock(&p->mu);
    while (!b->done) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    p->head++;
    return b;
}

int encode_pool_outstanding(const encode_pool *p) { return (int)(p->tail - p->head); }

void encode_pool_stop(encode_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->loaded);
    free(p->ring);
    free(p->threads);
    free(p);
}
