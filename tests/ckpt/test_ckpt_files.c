/* Unit tests of the checkpoint directory protocol (ckpt_dir.h) and of the
 * llm.c model file (llmc_io.h), on a temporary directory: which checkpoint
 * is the newest complete one, marker checks of sizes and missing files,
 * keep_last pruning, partial-directory clean-up, publication with `latest`,
 * moving step directories aside and the older checkpoint to fall back to;
 * llm.c fp32 round trip bit for bit, bf16 rounding to nearest even. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"
#include "expect.h"
#include "io/ckpt_dir.h"
#include "io/llmc_io.h"

static void write_file(const char *dir, const char *name, size_t bytes) {
    char path[CKPT_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f, "cannot create %s", path);
    for (size_t i = 0; i < bytes; i++) fputc((int)(i & 0xff), f);
    fclose(f);
}

/* A step directory of run with one shard file; complete when marked. */
static void make_step(const char *run, int step, int marked) {
    char dir[CKPT_PATH_MAX];
    ckpt_step_dir(dir, sizeof dir, run, step);
    make_dirs_or_fail(dir);
    write_file(dir, "shard_00000.h5", 100 + (size_t)step);
    if (marked) ckpt_marker_write(dir, step, 1);
}

static int exists(const char *run, const char *name) {
    char path[CKPT_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", run, name);
    return access(path, F_OK) == 0;
}

static void test_directories(const char *run) {
    char dir[CKPT_PATH_MAX], err[CKPT_PATH_MAX * 2];
    EXPECT(ckpt_find_newest(run, dir, sizeof dir) == -1, "empty run dir has no checkpoint");
    make_step(run, 2, 1);
    make_step(run, 4, 1);
    make_step(run, 6, 0); /* crashed before its marker */
    char tmp[CKPT_PATH_MAX];
    ckpt_tmp_dir(tmp, sizeof tmp, run, 8);
    make_dirs_or_fail(tmp);
    EXPECT(ckpt_find_newest(run, dir, sizeof dir) == 4, "newest complete is step 4");

    int64_t bytes = 0;
    ckpt_step_dir(dir, sizeof dir, run, 4);
    EXPECT(ckpt_marker_check(dir, &bytes, err, sizeof err) == 0 && bytes == 104,
           "marker check of a good checkpoint: %s", err);
    write_file(dir, "shard_00000.h5", 50);
    EXPECT(ckpt_marker_check(dir, NULL, err, sizeof err) != 0 && strstr(err, "truncated"),
           "a shorter file is found: %s", err);
    char shard[CKPT_PATH_MAX + 32];
    ckpt_shard_path(shard, sizeof shard, dir, 0);
    remove(shard);
    EXPECT(ckpt_marker_check(dir, NULL, err, sizeof err) != 0 && strstr(err, "missing"),
           "a missing file is found: %s", err);

    make_step(run, 10, 0);
    ckpt_tmp_dir(tmp, sizeof tmp, run, 12);
    make_dirs_or_fail(tmp);
    write_file(tmp, "shard_00000.h5", 10);
    ckpt_marker_write(tmp, 12, 1);
    ckpt_step_dir(dir, sizeof dir, run, 12);
    ckpt_publish(run, tmp, dir);
    char target[64] = "";
    char link[CKPT_PATH_MAX + 16];
    snprintf(link, sizeof link, "%s/latest", run);
    ssize_t n = readlink(link, target, sizeof target - 1);
    EXPECT(n > 0 && strcmp(target, "step_00000012") == 0, "latest -> %s", target);
    EXPECT(ckpt_find_newest(run, dir, sizeof dir) == 12, "published step 12 is the newest");

    char report[8192];
    EXPECT(ckpt_prune(run, 2, report, sizeof report) == 0 && report[0] == '\0',
           "a prune that removed everything reports nothing: %s", report);
    EXPECT(!exists(run, "step_00000002") && exists(run, "step_00000004") &&
               exists(run, "step_00000012"),
           "keep_last 2 keeps steps 4 and 12 only");
    EXPECT(exists(run, "step_00000006") && exists(run, "step_00000010"),
           "pruning leaves incomplete step directories alone");
    EXPECT(ckpt_remove_partial(run) == 1 && !exists(run, "step_00000008.tmp"),
           "the one partial .tmp directory is removed");
}

/* Moving aside, the steps in the way of a resume, the way back, names. */
static void test_move_aside(const char *base) {
    char run[CKPT_PATH_MAX], dir[CKPT_PATH_MAX], moved[CKPT_PATH_MAX + 32], err[CKPT_PATH_MAX * 2];
    snprintf(run, sizeof run, "%s/aside", base);
    make_step(run, 2, 1);
    make_step(run, 4, 1);
    make_step(run, 6, 0);
    int *steps;
    const int n = ckpt_list_steps(run, 4, &steps);
    EXPECT(n == 2 && steps[0] == 4 && steps[1] == 6, "steps from 4 on: 4 and 6, complete or not");
    free(steps);
    ckpt_step_dir(dir, sizeof dir, run, 6);
    EXPECT(ckpt_move_aside(dir, "incomplete", moved, sizeof moved, err, sizeof err) == 0 &&
               exists(run, "step_00000006.incomplete/shard_00000.h5") &&
               !exists(run, "step_00000006"),
           "moved aside with its file: %s", err);
    make_step(run, 6, 0);
    make_dirs_or_fail(strcat(strcpy(moved, dir), ".incomplete.2")); /* an empty one: skipped */
    EXPECT(ckpt_move_aside(dir, "incomplete", moved, sizeof moved, err, sizeof err) == 0 &&
               path_ends_with(moved, "step_00000006.incomplete.3") &&
               exists(run, "step_00000006.incomplete/shard_00000.h5") &&
               exists(run, "step_00000006.incomplete.3/shard_00000.h5"),
           "a taken name (even an empty directory) is never replaced: %s", moved);
    EXPECT(ckpt_find_newest(run, dir, sizeof dir) == 4, "moved-aside names are not checkpoints");
    EXPECT(ckpt_list_steps(run, 0, &steps) == 2, "nor steps in the way");
    free(steps);

    char why[64];
    ckpt_superseded_suffix(why, sizeof why, 2);
    EXPECT(!ckpt_went_back_to(run, 2), "the run has not gone back to step 2 yet");
    make_step(run, 8, 1);
    ckpt_step_dir(dir, sizeof dir, run, 8);
    EXPECT(ckpt_move_aside(dir, why, moved, sizeof moved, err, sizeof err) == 0 &&
               path_ends_with(moved, "step_00000008.superseded_by_step_00000002") &&
               ckpt_went_back_to(run, 2) && !ckpt_went_back_to(run, 4),
           "going back to step 2 is recorded by the name: %s", moved);

    EXPECT(ckpt_find_older_good(run, 4, dir, sizeof dir) == 2, "the one before step 4 is step 2");
    ckpt_step_dir(dir, sizeof dir, run, 2);
    write_file(dir, "shard_00000.h5", 1);
    EXPECT(ckpt_find_older_good(run, 4, dir, sizeof dir) == -1,
           "a truncated older checkpoint is no way back");

    char parent[CKPT_PATH_MAX];
    EXPECT(ckpt_split_step_dir("a/b/step_00000020//", parent, sizeof parent) == 20 &&
               strcmp(parent, "a/b") == 0,
           "a/b/step_00000020// is step 20 of %s", parent);
    EXPECT(ckpt_split_step_dir("step_00000003", parent, sizeof parent) == 3 &&
               strcmp(parent, ".") == 0,
           "step_00000003 is step 3 of %s", parent);
    EXPECT(ckpt_split_step_dir("a/step_00000003.incomplete", parent, sizeof parent) == -1 &&
               ckpt_split_step_dir("a/step_3", parent, sizeof parent) == -1,
           "other names are no step");
}

static void fill(const gpt2_layout *lay, float *p) {
    memset(p, 0, lay->n_elements * sizeof(float));
    unsigned s = 12345;
    for (int i = 0; i < lay->n_tensors; i++)
        for (size_t k = 0; k < lay->tensors[i].numel; k++) {
            s = s * 1103515245u + 12345u;
            p[lay->tensors[i].offset + k] =
                ((float)(s >> 8) / (float)(1u << 24) - 0.5f) * (float)(i + 1);
        }
    /* bf16 ties: 1 + 2^-8 rounds down to 1 (even), 1 + 3 * 2^-8 up to 1 + 2^-6. */
    p[lay->lnf_w] = 1.00390625f;
    p[lay->lnf_w + 1] = 1.01171875f;
}

static void test_llmc(const char *run) {
    gpt2_layout lay;
    layout_build(&lay, 2, 16, 2, 300, 384, 32);
    float *a = xmalloc(lay.n_elements * sizeof(float));
    float *b = xmalloc(lay.n_elements * sizeof(float));
    fill(&lay, a);
    char path[CKPT_PATH_MAX];
    snprintf(path, sizeof path, "%s/m.bin", run);
    llmc_save(path, &lay, a, false);
    EXPECT(llmc_is_model_file(path), "magic");
    llmc_load(path, &lay, b);
    EXPECT(memcmp(a, b, lay.n_elements * sizeof(float)) == 0, "fp32 round trip bit for bit");
    llmc_save(path, &lay, a, true);
    llmc_header h;
    char err[4096];
    EXPECT(llmc_read_header(path, &h, err, sizeof err) == 0, "bf16 header read: %s", err);
    EXPECT(h.version == LLMC_VERSION_BF16 && h.padded_vocab_size == 384 && h.max_seq_len == 32,
           "bf16 header");
    llmc_load(path, &lay, b);
    EXPECT(b[lay.lnf_w] == 1.0f && b[lay.lnf_w + 1] == 1.015625f, "bf16 ties to even: %.9g %.9g",
           b[lay.lnf_w], b[lay.lnf_w + 1]);
    double worst = 0;
    for (size_t i = 0; i < lay.n_elements; i++) {
        double e = a[i] != 0 ? (b[i] - a[i]) / a[i] : b[i];
        worst = e > worst ? e : -e > worst ? -e : worst;
    }
    EXPECT(worst <= 1.0 / 256, "bf16 relative error %.3g within half an ulp", worst);
    free(a);
    free(b);
    layout_free(&lay);
}

int main(void) {
    char run[] = "/tmp/test_ckpt_files.XXXXXX";
    CHECK(mkdtemp(run), "mkdtemp failed");
    test_directories(run);
    test_move_aside(run);
    test_llmc(run);
    remove_tree(run);
    if (failures) return 1;
    printf("checkpoint directories and llm.c files: OK\n");
    return 0;
}
