/* llm.c model files: import and export (see llmc_io.h). */
#include "io/llmc_io.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"
#include "model/bf16.h"

#define LLMC_HEADER_INTS 256
#define LLMC_CHUNK ((size_t)1 << 20) /* elements converted per pass (bf16) */

typedef struct {
    size_t offset, numel; /* in our flat buffer */
} llmc_span;

/* llm.c's per-layer tensors in file order: where each one sits in our block
 * table, and its shape in units of C: (rows * C) x (cols * C), cols 0 = 1-D. */
static const struct {
    size_t field;
    int rows, cols;
} BLOCK_TENSORS[12] = {
    {offsetof(block_offsets, ln1_w), 1, 0},     {offsetof(block_offsets, ln1_b), 1, 0},
    {offsetof(block_offsets, qkv_w), 3, 1},     {offsetof(block_offsets, qkv_b), 3, 0},
    {offsetof(block_offsets, attproj_w), 1, 1}, {offsetof(block_offsets, attproj_b), 1, 0},
    {offsetof(block_offsets, ln2_w), 1, 0},     {offsetof(block_offsets, ln2_b), 1, 0},
    {offsetof(block_offsets, fc_w), 4, 1},      {offsetof(block_offsets, fc_b), 4, 0},
    {offsetof(block_offsets, fcproj_w), 1, 4},  {offsetof(block_offsets, fcproj_b), 1, 0},
};

/* Our tensors in llm.c's file order; returns the count (out holds 12 L + 4). */
static int llmc_spans(const gpt2_layout *lay, llmc_span *out) {
    const size_t C = (size_t)lay->n_embd;
    int n = 0;
    out[n++] = (llmc_span){lay->wte, (size_t)lay->padded_vocab_size * C};
    out[n++] = (llmc_span){lay->wpe, (size_t)lay->block_size * C};
    for (int t = 0; t < 12; t++) {
        size_t numel =
            BLOCK_TENSORS[t].rows * C * (BLOCK_TENSORS[t].cols ? BLOCK_TENSORS[t].cols * C : 1);
        for (int l = 0; l < lay->n_layer; l++) {
            const char *block = (const char *)&lay->blocks[l];
            out[n++] = (llmc_span){*(const size_t *)(block + BLOCK_TENSORS[t].field), numel};
        }
    }
    out[n++] = (llmc_span){lay->lnf_w, C};
    out[n++] = (llmc_span){lay->lnf_b, C};
    size_t total = 0;
    for (int i = 0; i < n; i++) total += out[i].numel;
    CHECK(total == lay->n_params, "llm.c tensor list covers %zu of %zu parameters", total,
          lay->n_params);
    return n;
}

static llmc_span *spans_alloc(const gpt2_layout *lay, int *n) {
    llmc_span *spans = xcalloc((size_t)(12 * lay->n_layer + 4), sizeof(llmc_span));
    *n = llmc_spans(lay, spans);
    return spans;
}

/* Moves one tensor of n values between the file and data (fp32), through
 * buf in chunks when the file holds bf16. */
static void transfer_span(FILE *f, const char *path, bool write, bool bf16, float *data, size_t n,
                          uint16_t *buf) {
    const char *what = write ? "write failed (disk full?)" : "read failed";
    if (!bf16) {
        if ((write ? fwrite(data, 4, n, f) : fread(data, 4, n, f)) != n) FAIL("%s: %s", path, what);
        return;
    }
    for (size_t done = 0; done < n;) {
        size_t k = n - done < LLMC_CHUNK ? n - done : LLMC_CHUNK;
        for (size_t i = 0; write && i < k; i++) buf[i] = bf16_from_f32(data[done + i]);
        if ((write ? fwrite(buf, 2, k, f) : fread(buf, 2, k, f)) != k) FAIL("%s: %s", path, what);
        for (size_t i = 0; !write && i < k; i++) data[done + i] = bf16_to_f32(buf[i]);
        done += k;
    }
}

/* ------------------------------------------------------------------ import */

bool llmc_is_model_file(const char *path) {
    FILE *f = fopen_regular(path, "rb", 0, NULL, 0); /* a FIFO would block the open */
    if (!f) return false;
    int32_t magic = 0;
    bool yes = fread(&magic, 4, 1, f) == 1 && magic == LLMC_MAGIC;
    fclose(f);
    return yes;
}

model_shape llmc_header_shape(const llmc_header *h) {
    return (model_shape){.n_layer = h->n_layer,
                         .n_embd = h->n_embd,
                         .n_head = h->n_head,
                         .vocab_size = h->vocab_size,
                         .padded_vocab_size = h->padded_vocab_size,
                         .block_size = h->max_seq_len};
}

static size_t header_n_params(const llmc_header *h) {
    size_t C = (size_t)h->n_embd, L = (size_t)h->n_layer;
    return (size_t)h->padded_vocab_size * C + (size_t)h->max_seq_len * C + L * 12 * C * C +
           L * 13 * C + 2 * C;
}

int llmc_read_header(const char *path, llmc_header *h, char *err, size_t err_len) {
    FILE *f = fopen_regular(path, "rb", 0, NULL, 0);
    char why[512];
    if (!f)
        return set_error(err, err_len, "cannot open llm.c model file %s: %s", path,
                         open_regular_reason(path, errno, why, sizeof why));
    int32_t hd[LLMC_HEADER_INTS];
    const size_t got = fread(hd, sizeof(int32_t), LLMC_HEADER_INTS, f);
    fclose(f);
    if (got != LLMC_HEADER_INTS)
        return set_error(err, err_len, "%s: shorter than llm.c's 1024-byte header", path);
    if (hd[0] != LLMC_MAGIC)
        return set_error(err, err_len, "%s: bad magic %d (an llm.c model file has %d)", path, hd[0],
                         LLMC_MAGIC);
    if (hd[1] != LLMC_VERSION_FP32 && hd[1] != LLMC_VERSION_BF16)
        return set_error(err, err_len,
                         "%s: llm.c model version %d; supported: 3 (fp32) and 5 (bf16)", path,
                         hd[1]);
    *h = (llmc_header){.version = hd[1],
                       .max_seq_len = hd[2],
                       .vocab_size = hd[3],
                       .n_layer = hd[4],
                       .n_head = hd[5],
                       .n_embd = hd[6],
                       .padded_vocab_size = hd[7]};
    const model_shape shape = llmc_header_shape(h);
    if (shape_check(&shape, NULL, why, sizeof why) != 0)
        return set_error(err, err_len, "%s: llm.c header: %s", path, why);
    /* The sizes passed their bounds: these products cannot overflow. */
    struct stat st;
    const size_t elem = h->version == LLMC_VERSION_BF16 ? 2 : 4;
    const size_t expect = LLMC_HEADER_INTS * 4 + header_n_params(h) * elem;
    if (stat(path, &st) != 0)
        return set_error(err, err_len, "cannot stat %s: %s", path, strerror(errno));
    if ((size_t)st.st_size != expect)
        return set_error(
            err, err_len,
            "%s: %lld bytes, but its header's sizes make %zu (1024-byte header + "
            "%zu parameters x %zu bytes): the file is %s",
            path, (long long)st.st_size, expect, header_n_params(h), elem,
            (size_t)st.st_size < expect
                ? "shorter than its header says (truncated, or a wrong size in the header)"
                : "longer than its header says");
    return 0;
}

void llmc_load(const char *path, const gpt2_layout *lay, float *host_params) {
    llmc_header h;
    char err[4096];
    if (llmc_read_header(path, &h, err, sizeof err) != 0) FAIL("%s", err);
    if (h.n_layer != lay->n_layer || h.n_embd != lay->n_embd || h.n_head != lay->n_head ||
        h.vocab_size != lay->vocab_size || h.padded_vocab_size != lay->padded_vocab_size ||
        h.max_seq_len != lay->block_size)
        FAIL("%s: model sizes (L %d, C %d, NH %d, V %d, Vp %d, maxT %d) differ from the "
             "expected (%d, %d, %d, %d, %d, %d)",
             path, h.n_layer, h.n_embd, h.n_head, h.vocab_size, h.padded_vocab_size, h.max_seq_len,
             lay->n_layer, lay->n_embd, lay->n_head, lay->vocab_size, lay->padded_vocab_size,
             lay->block_size);
    FILE *f = fopen_regular(path, "rb", 0, NULL, 0);
    if (!f || fseek(f, LLMC_HEADER_INTS * 4, SEEK_SET) != 0) FAIL("cannot read %s", path);
    memset(host_params, 0, lay->n_elements * sizeof(float));
    const bool bf16 = h.version == LLMC_VERSION_BF16;
    uint16_t *buf = bf16 ? xmalloc(LLMC_CHUNK * 2) : NULL;
    int n;
    llmc_span *spans = spans_alloc(lay, &n);
    for (int i = 0; i < n; i++)
        transfer_span(f, path, false, bf16, host_params + spans[i].offset, spans[i].numel, buf);
    free(spans);
    free(buf);
    fclose(f);
}

/* ------------------------------------------------------------------ export */

void llmc_save(const char *path, const gpt2_layout *lay, const float *host_params, bool bf16) {
    char tmp[2100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char why[4400];
    FILE *f = fopen_regular(tmp, "wb", OPEN_REPLACE, why, sizeof why);
    if (!f) FAIL("%s", why);
    int32_t hd[LLMC_HEADER_INTS] = {LLMC_MAGIC,      bf16 ? LLMC_VERSION_BF16 : LLMC_VERSION_FP32,
                                    lay->block_size, lay->vocab_size,
                                    lay->n_layer,    lay->n_head,
                                    lay->n_embd,     lay->padded_vocab_size};
    if (fwrite(hd, sizeof(int32_t), LLMC_HEADER_INTS, f) != LLMC_HEADER_INTS)
        FAIL("%s: write failed", tmp);
    uint16_t *buf = bf16 ? xmalloc(LLMC_CHUNK * 2) : NULL;
    int n;
    llmc_span *spans = spans_alloc(lay, &n);
    for (int i = 0; i < n; i++)
        transfer_span(f, tmp, true, bf16, (float *)host_params + spans[i].offset, spans[i].numel,
                      buf);
    free(spans);
    free(buf);
    if (fclose(f) != 0) FAIL("%s: write failed (disk full?)", tmp);
    if (rename(tmp, path) != 0) FAIL("cannot rename %s to %s: %s", tmp, path, strerror(errno));
}
