/* Unit test for open_regular / fopen_regular (base/files.h): a regular file
 * opens blocking and close-on-exec; a FIFO (with or without a writer), a
 * directory, a device, a missing path and, with OPEN_NO_LINK, a symbolic link
 * are refused at once with a message naming the path and what it is; and
 * open_regular_reason gives the same without the path. A blocking open of the
 * FIFO would hang: the alarm ends the test then. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "expect.h"

static char dir[] = "/tmp/test_files_XXXXXX";

static const char *path_of(const char *name) {
    static char bufs[4][256];
    static int next;
    char *p = bufs[next++ % 4];
    snprintf(p, sizeof bufs[0], "%s/%s", dir, name);
    return p;
}

/* Refused with errno set and a message "<path><rest>". */
static void expect_refused(const char *path, int flags, int how, const char *rest) {
    char err[512] = "", want[512];
    errno = 0;
    const int fd = open_regular(path, flags, 0644, how, err, sizeof err);
    EXPECT(fd == -1, "%s: opened (fd %d)", path, fd);
    if (fd >= 0) close(fd);
    EXPECT(errno != 0, "%s: errno not set", path);
    snprintf(want, sizeof want, "%s%s", path, rest);
    EXPECT(strcmp(err, want) == 0, "%s: message '%s', want '%s'", path, err, want);
}

static void test_regular(void) {
    const char *file = path_of("plain.txt");
    FILE *w = fopen_regular(file, "w", 0, NULL, 0);
    EXPECT(w != NULL, "fopen_regular w");
    if (w) fputs("hello\n", w), fclose(w);
    char err[512] = "";
    const int fd = open_regular(file, O_RDONLY, 0, 0, err, sizeof err);
    EXPECT(fd >= 0, "regular file refused: %s", err);
    if (fd >= 0) {
        EXPECT(!(fcntl(fd, F_GETFL) & O_NONBLOCK), "left non-blocking");
        EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC, "not close-on-exec");
        close(fd);
    }
    FILE *r = fopen_regular(file, "r", 0, err, sizeof err);
    char line[32] = "";
    EXPECT(r && fgets(line, sizeof line, r) && strcmp(line, "hello\n") == 0, "read back: %s", err);
    if (r) fclose(r);
    EXPECT(fopen_regular(file, "x", 0, err, sizeof err) == NULL, "mode x accepted");
    EXPECT(strstr(err, "bad mode x") != NULL, "bad mode: '%s'", err);
    /* A link to a regular file is one, unless links are refused. */
    const char *link = path_of("link.txt");
    EXPECT(symlink(file, link) == 0, "symlink");
    const int via = open_regular(link, O_RDONLY, 0, 0, err, sizeof err);
    EXPECT(via >= 0, "link to a regular file refused: %s", err);
    if (via >= 0) close(via);
    expect_refused(
        link, O_RDONLY, OPEN_NO_LINK,
        " is a symbolic link: the run writes only its own files there (remove the link)");
}

static void test_fifo(void) {
    const char *fifo = path_of("fifo");
    EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    const char *rest = " is a FIFO (named pipe), not a regular file";
    expect_refused(fifo, O_RDONLY, 0, rest); /* no writer: open(2) would block */
    expect_refused(fifo, O_WRONLY, 0, rest); /* no reader: ENXIO, still named */
    char err[512] = "";
    EXPECT(fopen_regular(fifo, "r", 0, err, sizeof err) == NULL, "fopen_regular r: a FIFO");
    /* With a writer it would open at once, and is refused all the same. */
    const int other = open(fifo, O_RDWR);
    expect_refused(fifo, O_RDONLY, 0, rest);
    if (other >= 0) close(other);
    char why[256];
    EXPECT(strcmp(open_regular_reason(fifo, EINVAL, why, sizeof why),
                  "a FIFO (named pipe), not a regular file") == 0,
           "reason '%s'", why);
    const char *link = path_of("fifo_link");
    EXPECT(symlink(fifo, link) == 0, "symlink");
    expect_refused(link, O_RDONLY, 0, rest);
}

static void test_others(void) {
    expect_refused(dir, O_RDONLY, 0, " is a directory, not a regular file");
    expect_refused("/dev/null", O_RDONLY, 0, " is a character device, not a regular file");
    const char *missing = path_of("missing");
    char err[512] = "", want[512], why[256];
    EXPECT(open_regular(missing, O_RDONLY, 0, 0, err, sizeof err) == -1 && errno == ENOENT,
           "missing: errno %d", errno);
    snprintf(want, sizeof want, "cannot open %s: %s", missing, strerror(ENOENT));
    EXPECT(strcmp(err, want) == 0, "missing: '%s'", err);
    EXPECT(strcmp(open_regular_reason(missing, ENOENT, why, sizeof why), strerror(ENOENT)) == 0,
           "missing: reason '%s'", why);
    EXPECT(strcmp(open_regular_reason(dir, EINVAL, why, sizeof why),
                  "a directory, not a regular file") == 0,
           "directory: reason '%s'", why);
}

int main(void) {
    alarm(20);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_regular();
    test_fifo();
    test_others();
    remove_tree(dir);
    printf("test_files: %s\n", failures ? "FAILED" : "all checks passed");
    return failures != 0;
}
