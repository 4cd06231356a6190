/* Stop signals (see signals.h). */
#include "train/safety/signals.h"

#include <signal.h>
#include <string.h>

#include "base/fail.h"

static volatile sig_atomic_t received;

static void on_stop_signal(int sig) { received = sig; }

void signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* system calls in progress (file I/O, MPI) carry on */
    const int sigs[] = {SIGTERM, SIGUSR1};
    for (int i = 0; i < 2; i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            FAIL("cannot install the handler of signal %d", sigs[i]);
    /* SIGHUP (the terminal of a run started from it was closed) stops the
     * same way, with a checkpoint. An ignored one (nohup) stays ignored. */
    struct sigaction old;
    if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN &&
        sigaction(SIGHUP, &sa, NULL) != 0)
        FAIL("cannot install the handler of SIGHUP");
    /* SIGINT (Ctrl-C) stops the same way, once: the handler then resets
     * itself, so a second Ctrl-C ends the process at once, as users expect.
     * An ignored SIGINT (nohup, a background job of a script) stays ignored. */
    if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
        sa.sa_flags |= SA_RESETHAND;
        if (sigaction(SIGINT, &sa, NULL) != 0) FAIL("cannot install the handler of SIGINT");
    }
    /* A closed standard output (`gpt2_ddp ... | head`, a closed terminal)
     * fails the write with EPIPE instead of killing the run: streams.h
     * notices it, says so once and goes on. */
    signal(SIGPIPE, SIG_IGN);
    /* A file-size limit (ulimit -f) then fails the write with EFBIG, which
     * the writer reports like a full disk, instead of killing the rank
     * with a core dump. */
    signal(SIGXFSZ, SIG_IGN);
}

int signals_received(void) { return received; }
