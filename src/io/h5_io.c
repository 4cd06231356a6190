/* HDF5 files, attributes and checksummed fp32 datasets (see h5_io.h). */
#include "io/h5_io.h"

#define _GNU_SOURCE /* sync_file_range */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/files.h"

/* HDF5 closes the files still open from an atexit handler. After a failed
 * write (a full disk) that handler flushes a file whose metadata never made
 * it to disk and crashes (H5F__close_cb: exit 139 instead of our exit 1).
 * Every file we write is closed (and fsync'd) explicitly before it counts,
 * so nothing is lost by leaving the rest to the kernel. This must run before
 * any other HDF5 call: a constructor runs before main(). */
__attribute__((constructor)) static void h5_no_close_at_exit(void) { H5dont_atexit(); }

/* Our messages replace HDF5's automatic error stack dump on stderr. */
static void h5_quiet(void) {
    static int done;
    if (!done) H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    done = 1;
}

static herr_t first_error(unsigned n, const H5E_error2_t *err, void *data) {
    char *buf = data;
    if (n == 0 && err->desc) snprintf(buf, 512, "%s", err->desc);
    return 0;
}

void h5_last_error(char *buf, size_t len) {
    char desc[512] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_error, desc); /* innermost first */
    snprintf(buf, len, "%s", desc[0] ? desc : "unknown HDF5 error");
}

/* HDF5's reason, with what it means for a checkpoint when it is a checksum.
 * A failed system call shows as "file write failed: time = ..., filename =
 * ..., errno = 28, error message = 'No space left on device', ...": the
 * system's message comes first then, HDF5's summary after it. */
static void h5_reason(char *buf, size_t len) {
    char desc[512];
    h5_last_error(desc, sizeof desc);
    const char *sys = strstr(desc, "error message = '");
    if (sys) {
        sys += strlen("error message = '");
        const char *end = strchr(sys, '\'');
        const char *colon = strchr(desc, ':');
        snprintf(buf, len, "%.*s (HDF5: %.*s)", end ? (int)(end - sys) : 200, sys,
                 colon ? (int)(colon - desc) : 100, desc);
        return;
    }
    const char *hint = strstr(desc, "checksum") || strstr(desc, "Fletcher32")
                           ? " (checksum mismatch: the file is damaged)"
                           : "";
    snprintf(buf, len, "%s%s", desc, hint);
}

static hid_t file_access_list(void) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5_CHECK(fapl);
    /* The 1.10 format checksums the superblock, object headers and chunk
     * indexes; readable by HDF5 1.10 and later (h5py, h5dump). */
    H5_CHECK(H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110));
    return fapl;
}

/* ------------------------------------------------------ write-back flusher */

/* While a file is being written, a thread of its own keeps starting the
 * disk's write-back of what is written so far (sync_file_range, which does
 * not wait for the disk). The kernel would otherwise hold a checkpoint's
 * gigabytes as dirty pages until the final fsync (below its
 * dirty_background limit), so that the CPU's work (checksums, chunking,
 * the copy into the page cache) and the disk's came one after the other;
 * this way they overlap, and the writing thread never waits on the disk
 * for it. Advisory: nothing is lost where it fails. */
enum { FLUSHERS_MAX = 8, FLUSH_EVERY_MS = 20 };
typedef struct {
    hid_t file;
    int fd; /* a dup of the file's descriptor, closed by the flusher's stop */
    pthread_t thread;
    atomic_int stop;
    bool used;
} flusher;
static flusher flushers[FLUSHERS_MAX];
static pthread_mutex_t flushers_lock = PTHREAD_MUTEX_INITIALIZER;

static void *flusher_main(void *arg) {
    flusher *f = arg;
    const struct timespec pause = {0, FLUSH_EVERY_MS * 1000000L};
    while (!atomic_load(&f->stop)) {
#ifdef SYNC_FILE_RANGE_WRITE
        (void)sync_file_range(f->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void flusher_start(hid_t file) {
    void *handle = NULL;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || !handle) return;
    pthread_mutex_lock(&flushers_lock);
    for (int i = 0; i < FLUSHERS_MAX; i++) {
        flusher *f = &flushers[i];
        if (f->used) continue;
        f->fd = dup(*(int *)handle);
        if (f->fd < 0) break;
        f->file = file;
        atomic_store(&f->stop, 0);
        if (pthread_create(&f->thread, NULL, flusher_main, f) != 0) {
            close(f->fd);
            break;
        }
        f->used = true;
        break;
    }
    pthread_mutex_unlock(&flushers_lock);
}

static void flusher_stop(hid_t file) {
    pthread_mutex_lock(&flushers_lock);
    for (int i = 0; i < FLUSHERS_MAX; i++) {
        flusher *f = &flushers[i];
        if (!f->used || f->file != file) continue;
        atomic_store(&f->stop, 1);
        pthread_join(f->thread, NULL);
        close(f->fd);
        f->used = false;
    }
    pthread_mutex_unlock(&flushers_lock);
}

hid_t h5_create(const char *path) {
    h5_quiet();
    /* Created afresh, never through what is there: a link named like the
     * file must not redirect the write out of the run directory. */
    char stale[4200];
    if (remove_stale_file(path, stale, sizeof stale) != 0) FAIL("%s", stale);
    hid_t fapl = file_access_list();
    errno = 0;
    hid_t file = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    if (file < 0) {
        const int err = errno;
        char why[600];
        h5_reason(why, sizeof why); /* before H5Pclose, which empties the error stack */
        H5Pclose(fapl);
        if (err && !strstr(why, strerror(err)))
            FAIL("cannot create %s: %s (HDF5: %s)", path, strerror(err), why);
        FAIL("cannot create %s: %s", path, why);
    }
    H5Pclose(fapl);
    flusher_start(file);
    return file;
}

/* Reads a whole file into the page cache ahead of HDF5 (a thread with its
 * own descriptor: it may outlive the file's H5Fclose). */
static void *prefetch_main(void *arg) {
    const int fd = (int)(intptr_t)arg;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    close(fd);
    return NULL;
}

/* A large file is read while HDF5 checks and copies what came before, so
 * that the disk and the CPU overlap (HDF5 reads chunk after chunk, and the
 * kernel's read-ahead alone keeps the disk busy only part of the time).
 * Advisory: nothing changes where it fails. */
static void start_prefetch(hid_t file, off_t size) {
    if (size < ((off_t)64 << 20)) return;
    void *handle = NULL;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || !handle) return;
    const int fd = dup(*(int *)handle);
    if (fd < 0) return;
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, prefetch_main, (void *)(intptr_t)fd) != 0) close(fd);
    pthread_attr_destroy(&attr);
}

hid_t h5_open_read(const char *path, const char *what) {
    h5_quiet();
    /* HDF5 opens the path itself, and a FIFO would block that open (for
     * ever: a stop signal restarts it): a non-blocking look first. */
    const int fd = open_regular(path, O_RDONLY, 0, 0, NULL, 0);
    if (fd < 0) {
        char why[256];
        FAIL("cannot open %s %s: %s", what, path,
             open_regular_reason(path, errno, why, sizeof why));
    }
    close(fd);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        char why[600];
        h5_reason(why, sizeof why);
        FAIL("%s: cannot open as %s (%s)", path, what, why);
    }
    return file;
}

hid_t h5_open_read_whole(const char *path, const char *what) {
    hid_t file = h5_open_read(path, what);
    struct stat st;
    if (stat(path, &st) == 0) start_prefetch(file, st.st_size);
    return file;
}

bool h5_is_hdf5(const char *path) {
    /* HDF5's rule, read here so that a file whose signature is intact but
     * whose metadata is damaged still counts (and fails its checksum on
     * open): the signature at byte 0 or at 512, 1024, 2048, ... (after a
     * user block). */
    static const char signature[8] = {'\211', 'H', 'D', 'F', '\r', '\n', '\032', '\n'};
    FILE *f = fopen_regular(path, "rb", 0, NULL, 0);
    if (!f) return false;
    bool found = false;
    char got[8];
    for (long at = 0; !found && at >= 0 && at < (1L << 40); at = at ? 2 * at : 512) {
        if (fseek(f, at, SEEK_SET) != 0 || fread(got, 1, 8, f) != 8) break;
        found = memcmp(got, signature, 8) == 0;
    }
    fclose(f);
    return found;
}

void h5_close(hid_t file, const char *path) {
    flusher_stop(file);
    if (H5Fclose(file) < 0) {
        char why[600];
        h5_reason(why, sizeof why);
        FAIL("%s: closing failed, the file is incomplete (disk full?): %s", path, why);
    }
}

/* ---------------------------------------------------------------- attributes */

static void attr_write(hid_t obj, const char *name, hid_t type, hid_t space, const void *value) {
    hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0) FAIL("cannot create attribute %s", name);
    H5_CHECK(H5Awrite(attr, type, value));
    H5Aclose(attr);
    H5Sclose(space);
}

void h5_attr_write_i64(hid_t obj, const char *name, int64_t value) {
    attr_write(obj, name, H5T_NATIVE_INT64, H5Screate(H5S_SCALAR), &value);
}

void h5_attr_write_i64_array(hid_t obj, const char *name, const int64_t *values, size_t n) {
    hsize_t dims[1] = {n};
    attr_write(obj, name, H5T_NATIVE_INT64, H5Screate_simple(1, dims, NULL), values);
}

void h5_attr_write_u64(hid_t obj, const char *name, uint64_t value) {
    attr_write(obj, name, H5T_NATIVE_UINT64, H5Screate(H5S_SCALAR), &value);
}

void h5_attr_write_f64(hid_t obj, const char *name, double value) {
    attr_write(obj, name, H5T_NATIVE_DOUBLE, H5Screate(H5S_SCALAR), &value);
}

void h5_attr_write_str(hid_t obj, const char *name, const char *value) {
    hid_t type = H5Tcopy(H5T_C_S1);
    H5_CHECK(H5Tset_size(type, strlen(value) + 1));
    attr_write(obj, name, type, H5Screate(H5S_SCALAR), value);
    H5Tclose(type);
}

/* Opens attribute name and checks it holds n elements. */
static hid_t attr_open(hid_t obj, const char *path, const char *name, size_t n) {
    if (H5Aexists(obj, name) <= 0) FAIL("%s: attribute '%s' missing", path, name);
    hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (attr < 0) FAIL("%s: cannot open attribute '%s'", path, name);
    hid_t space = H5Aget_space(attr);
    hssize_t count = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    if (count != (hssize_t)n)
        FAIL("%s: attribute '%s' has %lld values, expected %zu", path, name, (long long)count, n);
    return attr;
}

static void attr_read(hid_t obj, const char *path, const char *name, hid_t type, void *out,
                      size_t n) {
    hid_t attr = attr_open(obj, path, name, n);
    if (H5Aread(attr, type, out) < 0) FAIL("%s: cannot read attribute '%s'", path, name);
    H5Aclose(attr);
}

int64_t h5_attr_read_i64(hid_t obj, const char *path, const char *name) {
    int64_t v = 0;
    attr_read(obj, path, name, H5T_NATIVE_INT64, &v, 1);
    return v;
}

void h5_attr_read_i64_array(hid_t obj, const char *path, const char *name, int64_t *values,
                            size_t n) {
    attr_read(obj, path, name, H5T_NATIVE_INT64, values, n);
}

int h5_attr_get_i64(hid_t obj, const char *name, int64_t *value, char *why, size_t why_len) {
    if (H5Aexists(obj, name) <= 0) return set_error(why, why_len, "missing");
    hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
    if (attr < 0) return set_error(why, why_len, "cannot be opened");
    hid_t type = H5Aget_type(attr), space = H5Aget_space(attr);
    const hssize_t count = H5Sget_simple_extent_npoints(space);
    int rc = 0;
    if (H5Tget_class(type) != H5T_INTEGER)
        rc = set_error(why, why_len, "not an integer");
    else if (count != 1)
        rc = set_error(why, why_len, "%lld values, not one", (long long)count);
    else if (H5Aread(attr, H5T_NATIVE_INT64, value) < 0)
        rc = set_error(why, why_len, "cannot be read");
    H5Sclose(space);
    H5Tclose(type);
    H5Aclose(attr);
    return rc;
}

uint64_t h5_attr_read_u64(hid_t obj, const char *path, const char *name) {
    uint64_t v = 0;
    attr_read(obj, path, name, H5T_NATIVE_UINT64, &v, 1);
    return v;
}

double h5_attr_read_f64(hid_t obj, const char *path, const char *name) {
    double v = 0;
    attr_read(obj, path, name, H5T_NATIVE_DOUBLE, &v, 1);
    return v;
}

char *h5_attr_read_str(hid_t obj, const char *path, const char *name) {
    hid_t attr = attr_open(obj, path, name, 1);
    hid_t type = H5Aget_type(attr);
    if (H5Tget_class(type) != H5T_STRING) FAIL("%s: attribute '%s' is not a string", path, name);
    size_t size = H5Tget_size(type);
    char *text = xcalloc(size + 1, 1);
    if (H5Aread(attr, type, text) < 0) FAIL("%s: cannot read attribute '%s'", path, name);
    H5Tclose(type);
    H5Aclose(attr);
    return text;
}

/* ------------------------------------------------------------------ datasets */

/* Contiguous and unfiltered: HDF5 then writes and reads the caller's
 * buffer in one piece, at the disk's speed, where chunks with a filter cost
 * a copy and a checksum per chunk in HDF5's one thread (a checkpoint wrote
 * at half the disk's speed that way). Integrity comes from our CRC32C per
 * block (write_checksums). */
static hid_t dataset_create_list(void) {
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5_CHECK(dcpl);
    /* No modification times: the same state gives the same bytes. */
    H5_CHECK(H5Pset_obj_track_times(dcpl, 0));
    H5_CHECK(H5Pset_layout(dcpl, H5D_CONTIGUOUS));
    /* Every byte is written: filling it with zeros first is wasted work. */
    H5_CHECK(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
    return dcpl;
}

/* ------------------------------------------------------------- checksums */

/* CRC-32C (Castagnoli: ext4's, iSCSI's), with the SSE4.2 instruction where
 * the CPU has it (about 8 bytes per 3 cycles), a table elsewhere. */
static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32c_table(uint32_t crc, const unsigned char *p, size_t n) {
    pthread_once(&crc_table_once, crc_table_init);
    crc = ~crc;
    while (n--) crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *p,
                                                               size_t n) {
    uint64_t c = ~crc & 0xffffffffu;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}
#endif

uint32_t h5_crc32c(uint32_t crc, const void *data, size_t n, bool portable) {
#if defined(__x86_64__)
    if (!portable && __builtin_cpu_supports("sse4.2")) return crc32c_sse42(crc, data, n);
#endif
    return crc32c_table(crc, data, n);
}

/* One CRC32C per H5_SUM_BLOCK elements of the flattened data. For a large
 * dataset they are computed by a thread of their own while HDF5 writes the
 * same buffer, so that they cost the write no time (sum_start, sum_finish). */
typedef struct {
    const float *data;
    int64_t n, blocks;
    uint32_t *sums;
    pthread_t thread;
    bool threaded;
} block_sums;

static void *sum_main(void *arg) {
    block_sums *b = arg;
    for (int64_t i = 0; i < b->blocks; i++) {
        const int64_t lo = i * H5_SUM_BLOCK;
        const int64_t hi = lo + H5_SUM_BLOCK < b->n ? lo + H5_SUM_BLOCK : b->n;
        b->sums[i] = h5_crc32c(0, b->data + lo, (size_t)(hi - lo) * sizeof(float), false);
    }
    return NULL;
}

static void sum_start(block_sums *b, const float *data, int64_t n) {
    *b = (block_sums){.data = data, .n = n, .blocks = (n + H5_SUM_BLOCK - 1) / H5_SUM_BLOCK};
    b->sums = xmalloc((size_t)(b->blocks > 0 ? b->blocks : 1) * sizeof(uint32_t));
    b->threaded = b->blocks >= 4 && pthread_create(&b->thread, NULL, sum_main, b) == 0;
    if (!b->threaded) sum_main(b);
}

/* The sums, in the dataset's attribute H5_SUMS_ATTR (none for no data). */
static void sum_finish(block_sums *b, hid_t dset, const char *path, const char *name) {
    if (b->threaded) pthread_join(b->thread, NULL);
    if (b->blocks > 0) {
        const hsize_t len = (hsize_t)b->blocks;
        hid_t space = H5Screate_simple(1, &len, NULL);
        hid_t attr = H5Acreate2(dset, H5_SUMS_ATTR, H5T_STD_U32LE, space, H5P_DEFAULT, H5P_DEFAULT);
        if (attr < 0 || H5Awrite(attr, H5T_NATIVE_UINT32, b->sums) < 0) {
            char why[600];
            h5_reason(why, sizeof why);
            free(b->sums);
            FAIL("%s: cannot write the checksums of dataset %s (disk full?): %s", path, name, why);
        }
        H5Aclose(attr);
        H5Sclose(space);
    }
    free(b->sums);
}

/* The elements [begin, begin + count) of a dataset of total elements (the
 * flattened data), just read into out, against their blocks' CRC32C. A
 * block only partly in the range is read whole to be checked. Datasets of
 * older files carry HDF5's Fletcher32 per chunk instead (HDF5 checked it
 * while reading), files written by others may carry neither. */
static void verify_checksums(hid_t dset, const char *path, const char *name, int64_t total,
                             int64_t begin, int64_t count, const float *out) {
    if (count == 0 || H5Aexists(dset, H5_SUMS_ATTR) <= 0) return;
    const int64_t blocks = (total + H5_SUM_BLOCK - 1) / H5_SUM_BLOCK;
    hid_t attr = H5Aopen(dset, H5_SUMS_ATTR, H5P_DEFAULT);
    hid_t aspace = attr < 0 ? -1 : H5Aget_space(attr);
    const hssize_t stored = aspace < 0 ? -1 : H5Sget_simple_extent_npoints(aspace);
    if (aspace >= 0) H5Sclose(aspace);
    if (stored != blocks) {
        if (attr >= 0) H5Aclose(attr);
        FAIL("%s: dataset %s: read failed: %lld checksums stored for %lld blocks (checksum "
             "mismatch: the file is damaged)",
             path, name, (long long)stored, (long long)blocks);
    }
    uint32_t *sums = xmalloc((size_t)blocks * sizeof(uint32_t));
    H5_CHECK(H5Aread(attr, H5T_NATIVE_UINT32, sums));
    H5Aclose(attr);
    float *whole = NULL;
    for (int64_t b = begin / H5_SUM_BLOCK; b * H5_SUM_BLOCK < begin + count; b++) {
        const int64_t lo = b * H5_SUM_BLOCK;
        const int64_t hi = lo + H5_SUM_BLOCK < total ? lo + H5_SUM_BLOCK : total;
        const float *block = out + (lo - begin);
        if (lo < begin || hi > begin + count) { /* partly in the range (1-D reads only) */
            if (!whole) whole = xmalloc((size_t)H5_SUM_BLOCK * sizeof(float));
            hid_t space = H5Dget_space(dset);
            hsize_t start[1] = {(hsize_t)lo}, n[1] = {(hsize_t)(hi - lo)};
            H5_CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, n, NULL));
            hid_t mem = H5Screate_simple(1, n, NULL);
            H5_CHECK(H5Dread(dset, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, whole));
            H5Sclose(mem);
            H5Sclose(space);
            block = whole;
        }
        if (h5_crc32c(0, block, (size_t)(hi - lo) * sizeof(float), false) != sums[b]) {
            free(whole);
            free(sums);
            FAIL("%s: dataset %s: read failed: elements [%lld, %lld) do not match their CRC32C "
                 "checksum (checksum mismatch: the file is damaged)",
                 path, name, (long long)lo, (long long)hi);
        }
    }
    free(whole);
    free(sums);
}

void h5_write_f32(hid_t file, const char *path, const char *name, int ndim, const int64_t *dims,
                  const float *data) {
    hsize_t hdims[2] = {(hsize_t)dims[0], ndim == 2 ? (hsize_t)dims[1] : 1};
    hid_t space = H5Screate_simple(ndim, hdims, NULL);
    hid_t dcpl = dataset_create_list();
    hid_t dset = H5Dcreate2(file, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dset < 0) {
        char why[600];
        h5_reason(why, sizeof why);
        FAIL("%s: cannot create dataset %s: %s", path, name, why);
    }
    block_sums sums;
    sum_start(&sums, data, (int64_t)(hdims[0] * hdims[1]));
    const herr_t wrote = H5Dwrite(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (wrote < 0) {
        char why[600];
        h5_reason(why, sizeof why);
        if (sums.threaded) pthread_join(sums.thread, NULL); /* it reads data */
        free(sums.sums);
        FAIL("%s: cannot write dataset %s (disk full?): %s", path, name, why);
    }
    sum_finish(&sums, dset, path, name);
    H5Dclose(dset);
    H5Pclose(dcpl);
    H5Sclose(space);
}

int h5_dataset_info(hid_t file, const char *name, int *ndim, int64_t dims[2], bool *is_float) {
    h5_quiet();
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return -1;
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT); /* fails on a group of that name */
    if (dset < 0) return -1;
    hid_t space = H5Dget_space(dset), type = H5Dget_type(dset);
    hsize_t got[H5S_MAX_RANK] = {0};
    *ndim = H5Sget_simple_extent_dims(space, got, NULL);
    dims[0] = *ndim > 0 ? (int64_t)got[0] : 0;
    dims[1] = *ndim > 1 ? (int64_t)got[1] : 0;
    *is_float = H5Tget_class(type) == H5T_FLOAT;
    H5Tclose(type);
    H5Sclose(space);
    H5Dclose(dset);
    return 0;
}

/* Opens dataset name and checks its shape is (ndim, dims). */
static hid_t dataset_open(hid_t file, const char *path, const char *name, int ndim,
                          const int64_t *dims) {
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) FAIL("%s: dataset %s missing", path, name);
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
    if (dset < 0) {
        char why[600];
        h5_reason(why, sizeof why);
        FAIL("%s: cannot open dataset %s: %s", path, name, why);
    }
    hid_t space = H5Dget_space(dset);
    hsize_t got[2] = {0, 0};
    int got_ndim = H5Sget_simple_extent_dims(space, got, NULL);
    H5Sclose(space);
    if (got_ndim != ndim || got[0] != (hsize_t)dims[0] || (ndim == 2 && got[1] != (hsize_t)dims[1]))
        FAIL("%s: dataset %s has the wrong shape (expected %lld x %lld)", path, name,
             (long long)dims[0], ndim == 2 ? (long long)dims[1] : 1LL);
    return dset;
}

static void dataset_read(hid_t dset, hid_t mem, hid_t file_space, const char *path,
                         const char *name, float *out) {
    if (H5Dread(dset, H5T_NATIVE_FLOAT, mem, file_space, H5P_DEFAULT, out) < 0) {
        char why[600];
        h5_reason(why, sizeof why);
        FAIL("%s: dataset %s: read failed: %s", path, name, why);
    }
}

void h5_read_f32(hid_t file, const char *path, const char *name, int ndim, const int64_t *dims,
                 float *out) {
    hid_t dset = dataset_open(file, path, name, ndim, dims);
    dataset_read(dset, H5S_ALL, H5S_ALL, path, name, out);
    const int64_t total = dims[0] * (ndim == 2 ? dims[1] : 1);
    verify_checksums(dset, path, name, total, 0, total, out);
    H5Dclose(dset);
}

void h5_read_f32_range(hid_t file, const char *path, const char *name, int64_t length,
                       int64_t begin, int64_t count, float *out) {
    CHECK(begin >= 0 && count >= 0 && begin + count <= length,
          "%s: range [%lld, %lld) outside dataset %s of %lld", path, (long long)begin,
          (long long)(begin + count), name, (long long)length);
    hid_t dset = dataset_open(file, path, name, 1, &length);
    if (count > 0) {
        hid_t space = H5Dget_space(dset);
        hsize_t start[1] = {(hsize_t)begin}, n[1] = {(hsize_t)count};
        H5_CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, n, NULL));
        hid_t mem = H5Screate_simple(1, n, NULL);
        dataset_read(dset, mem, space, path, name, out);
        H5Sclose(mem);
        H5Sclose(space);
        verify_checksums(dset, path, name, length, begin, count, out);
    }
    H5Dclose(dset);
}
