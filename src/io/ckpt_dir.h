/* The checkpoint directory protocol, on the file system only (no MPI, no
 * HDF5): names, the completion marker, atomic publication, `latest`, finding
 * the newest complete checkpoint, keep_last pruning and clean-up of partial
 * directories.
 *
 *   <run_dir>/step_00000030/        a complete checkpoint:
 *       model.h5                    rank 0: weights by name + run state
 *       shard_00000.h5 ...          one per rank: master, m, v of [lo, hi)
 *       COMPLETE                    marker: step, world, every file and its size
 *   <run_dir>/step_00000040.tmp/    being written (or left by a crash): ignored
 *   <run_dir>/latest -> step_00000030
 *   <run_dir>/step_00000040.incomplete/   moved aside, never loaded or deleted
 *   <run_dir>/step_00000050.superseded_by_step_00000030/   likewise
 *
 * A directory without COMPLETE is never loaded; COMPLETE is written only
 * after every rank's files are closed and fsync'd, and the directory is
 * renamed into place after it. */
#ifndef GPT2_IO_CKPT_DIR_H
#define GPT2_IO_CKPT_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKPT_PATH_MAX 2048
#define CKPT_MARKER "COMPLETE"
#define CKPT_MODEL_FILE "model.h5"

/* run_dir/step_%08d and run_dir/step_%08d.tmp */
void ckpt_step_dir(char *out, size_t len, const char *run_dir, int step);
void ckpt_tmp_dir(char *out, size_t len, const char *run_dir, int step);
/* dir/shard_%05d.h5 and dir/model.h5 */
void ckpt_shard_path(char *out, size_t len, const char *dir, int rank);
void ckpt_model_path(char *out, size_t len, const char *dir);

/* The step of a step directory's name (trailing slashes allowed), with its
 * parent directory into run_dir ("." for none); -1 for another name. */
int ckpt_split_step_dir(const char *dir, char *run_dir, size_t len);

/* Has dir a completion marker? */
bool ckpt_is_complete(const char *dir);
/* The newest complete step directory under run_dir into out; its step, or
 * -1 when there is none (or run_dir does not exist). */
int ckpt_find_newest(const char *run_dir, char *out, size_t len);

/* Writes dir/COMPLETE listing every file in dir with its size, fsync'd. */
void ckpt_marker_write(const char *dir, int step, int world);
/* Reads dir/COMPLETE and checks every file it lists is present with the
 * recorded size. Returns 0, or -1 with a message naming the file and the
 * problem in err. bytes (may be NULL) receives the total size. */
int ckpt_marker_check(const char *dir, int64_t *bytes, char *err, size_t err_len);

/* Step directories (step_NNNNNNNN, complete or not) of run_dir with a step
 * of at least from, ascending; returns the count (*steps malloc'd, NULL when
 * none). */
int ckpt_list_steps(const char *run_dir, int from, int **steps);
/* The newest complete checkpoint of run_dir older than before whose marker
 * checks (its files are all there with their sizes) into out; its step, or
 * -1 when there is none. */
int ckpt_find_older_good(const char *run_dir, int before, char *out, size_t len);

/* Renames dir to dir.WHY, or dir.WHY.2, dir.WHY.3, ... when that exists, so
 * that it is neither loaded nor in the way of a save, and nothing is deleted.
 * The new name into moved; 0, or -1 with the reason in err. */
int ckpt_move_aside(const char *dir, const char *why, char *moved, size_t moved_len, char *err,
                    size_t err_len);
/* The suffix ckpt_move_aside gets for a checkpoint newer than the step the
 * run went back to (resume=<older step>): "superseded_by_step_%08d". */
void ckpt_superseded_suffix(char *out, size_t len, int step);
/* run_dir holds a directory moved aside with that suffix: the run already
 * went back to step once. */
bool ckpt_went_back_to(const char *run_dir, int step);
/* Points run_dir/latest at step_dir (a renamed symlink), fsync'ing run_dir. */
void ckpt_point_latest(const char *run_dir, const char *step_dir);

/* Renames tmp_dir to final_dir, then points run_dir/latest at it (through
 * a renamed symlink), fsync'ing the run directory after each step. */
void ckpt_publish(const char *run_dir, const char *tmp_dir, const char *final_dir);
/* Removes complete step directories of run_dir beyond the newest keep_last
 * (0 keeps all). A directory that cannot be removed (an immutable file,
 * another owner) is no reason to lose the run: it stays, and report gets a
 * warning naming it and the fix the first time it fails in this process
 * ("" otherwise). Returns how many could not be removed. */
int ckpt_prune(const char *run_dir, int keep_last, char *report, size_t report_len);
/* Removes every partial (step_*.tmp) directory of run_dir; returns how many. */
int ckpt_remove_partial(const char *run_dir);

#endif
