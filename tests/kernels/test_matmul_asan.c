/* The CPU GEMM's bounds under the sanitizers: its block loops are not
 * instrumented (kernels/cpu/matmul.c says why), so each product checks the
 * spans of its operands once. This test, in an ASan build (the sanitizer
 * run's build-asan; elsewhere it exits 77, reported as skipped), runs
 * itself as a child that multiplies with an input one float short, another
 * with a weight one float short, and one with an output one float short:
 * each must end with ASan's exit code (86 in the sanitizer run) and a report
 * of a heap buffer overflow, written where this test points ASan (its own
 * folder, not the run's report folder: these reports are expected). A child
 * with operands of the right size must exit 0 with no report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/matmul.h"

#if defined(__SANITIZE_ADDRESS__)
enum { N = 7, C = 33, OC = 20 };

/* One product with operand `shorter` ("inp", "weight", "out" or "none") one
 * float short of its size. */
static int child(const char *shorter) {
    const int cut_inp = strcmp(shorter, "inp") == 0, cut_w = strcmp(shorter, "weight") == 0;
    const int cut_out = strcmp(shorter, "out") == 0;
    float *inp = calloc(N * C - cut_inp, sizeof(float));
    float *w = calloc(OC * C - cut_w, sizeof(float));
    float *out = calloc(N * OC - cut_out, sizeof(float));
    matmul_forward_cpu(out, inp, w, NULL, N, C, OC);
    printf("product done: out[0] = %g\n", out[0]);
    free(inp), free(w), free(out);
    return 0;
}

/* Runs this program as a child for `shorter`, ASan's reports into dir. */
static int run_child(const char *self, const char *shorter, const char *dir, char *report,
                     size_t len) {
    char options[1024];
    snprintf(options, sizeof options, "exitcode=86:halt_on_error=1:detect_leaks=0:log_path=%s/%s",
             dir, shorter);
    const pid_t pid = fork();
    if (pid == 0) {
        setenv("ASAN_OPTIONS", options, 1);
        execl(self, self, "child", shorter, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    report[0] = '\0';
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cat %s/%s.* 2>/dev/null", dir, shorter);
    FILE *p = popen(cmd, "r");
    if (p) {
        const size_t n = fread(report, 1, len - 1, p);
        report[n] = '\0';
        pclose(p);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#endif

int main(int argc, char **argv) {
#if !defined(__SANITIZE_ADDRESS__)
    (void)argc, (void)argv;
    printf("not an AddressSanitizer build (GPT2_SANITIZE): nothing to check\n");
    return 77;
#else
    if (argc == 3 && strcmp(argv[1], "child") == 0) return child(argv[2]);
    char dir[] = "/tmp/test_matmul_asan_XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    static char report[1 << 16];
    int failures = 0;
    const char *cases[] = {"inp", "weight", "out", "none"};
    for (int i = 0; i < 4; i++) {
        const int want_report = strcmp(cases[i], "none") != 0;
        const int code = run_child(argv[0], cases[i], dir, report, sizeof report);
        const int found = strstr(report, "heap-buffer-overflow") != NULL;
        const int ok = want_report ? code == 86 && found : code == 0 && report[0] == '\0';
        printf("%-6s one float short: exit %d, %s: %s\n", cases[i], code,
               report[0] ? (found ? "heap-buffer-overflow reported" : "another report")
                         : "no report",
               ok ? "ok" : "FAIL");
        failures += !ok;
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("%s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
#endif
}
