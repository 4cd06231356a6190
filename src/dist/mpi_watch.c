/* The watched wait of CPU ranks (see mpi_watch.h). */
#include "dist/mpi_watch.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"

enum { HOST_MAX = 256, PHASE_MAX = 128, TAG_BEAT = 1, TAG_BYE = 2, NAMED_MAX = 8 };
/* A wait starts beating after BEAT_AFTER_S, then beats every BEAT_EVERY_S; a
 * rank last heard longer than ANSWER_WINDOW_S ago (three beats) is silent.
 * The lowest answering rank reports; the others after GRACE_S more. */
static const double BEAT_AFTER_S = 1.0, BEAT_EVERY_S = 1.0, ANSWER_WINDOW_S = 3.0, GRACE_S = 5.0;
/* A send buffer must outlive a request freed before it completes. */
static const char beat_byte = 1;

static struct {
    MPI_Comm comm;    /* MPI_COMM_NULL: none (a world of one, or freed) */
    int rank, size;   /* in the job */
    char *hosts;      /* size x HOST_MAX, in rank order */
    double *heard;    /* per rank, clock_s when its last beat was read; 0: never */
    double timeout_s; /* 0: unarmed */
    char phase[PHASE_MAX];
} watch = {.comm = MPI_COMM_NULL};

/* One wait that the watch judges. */
typedef struct {
    const char *what;
    MPI_Comm comm; /* whose members the message may name */
    double since, judge_at;
    bool deferred; /* the lowest answering rank was given its turn */
} watched_wait;

void mpi_watch_init(MPI_Comm job, const char *host) {
    MPI_CHECK(MPI_Comm_dup(job, &watch.comm));
    MPI_CHECK(MPI_Comm_rank(watch.comm, &watch.rank));
    MPI_CHECK(MPI_Comm_size(watch.comm, &watch.size));
    watch.hosts = xcalloc((size_t)watch.size, HOST_MAX);
    watch.heard = xcalloc((size_t)watch.size, sizeof *watch.heard);
    char mine[HOST_MAX];
    snprintf(mine, sizeof mine, "%s", host);
    MPI_CHECK(MPI_Allgather(mine, HOST_MAX, MPI_CHAR, watch.hosts, HOST_MAX, MPI_CHAR, watch.comm));
}

void mpi_watch_arm(double timeout_s) {
    if (watch.comm != MPI_COMM_NULL) watch.timeout_s = timeout_s;
}

void mpi_watch_phase(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(watch.phase, sizeof watch.phase, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------- beats */

static void watch_beat(void) {
    for (int r = 0; r < watch.size; r++) {
        if (r == watch.rank) continue;
        MPI_Request req;
        MPI_CHECK(MPI_Isend(&beat_byte, 1, MPI_BYTE, r, TAG_BEAT, watch.comm, &req));
        MPI_CHECK(MPI_Request_free(&req));
    }
}

/* Reads the beats that arrived; a rank's last beat says when it was alive. */
static void watch_listen(double now) {
    for (;;) {
        int any = 0;
        MPI_Status st;
        MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, TAG_BEAT, watch.comm, &any, &st));
        if (!any) return;
        char byte;
        MPI_CHECK(
            MPI_Recv(&byte, 1, MPI_BYTE, st.MPI_SOURCE, TAG_BEAT, watch.comm, MPI_STATUS_IGNORE));
        watch.heard[st.MPI_SOURCE] = now;
    }
}

/* ------------------------------------------------------- the report */

/* in[r]: job rank r is a member of comm (all, for the job's own). */
static void watch_members(MPI_Comm comm, bool *in) {
    MPI_Group mine, job;
    MPI_CHECK(MPI_Comm_group(comm, &mine));
    MPI_CHECK(MPI_Comm_group(watch.comm, &job));
    int n = 0;
    MPI_CHECK(MPI_Group_size(mine, &n));
    int *ranks = xcalloc((size_t)n, sizeof *ranks), *at = xcalloc((size_t)n, sizeof *at);
    for (int i = 0; i < n; i++) ranks[i] = i;
    MPI_CHECK(MPI_Group_translate_ranks(mine, n, ranks, job, at));
    for (int r = 0; r < watch.size; r++) in[r] = false;
    for (int i = 0; i < n; i++)
        if (at[i] >= 0 && at[i] < watch.size) in[at[i]] = true;
    free(ranks);
    free(at);
    MPI_Group_free(&mine);
    MPI_Group_free(&job);
}

/* "rank 1/2 (host h)" for each member that does not answer; their count. */
static int watch_name_silent(const bool *member, const bool *answers, char *out, size_t len) {
    int n = 0;
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < watch.size; r++) {
        if (!member[r] || answers[r]) continue;
        if (n < NAMED_MAX && used < len)
            used += (size_t)snprintf(out + used, len - used, "%s%d/%d (host %s)", n ? ", " : "", r,
                                     watch.size, watch.hosts + (size_t)r * HOST_MAX);
        n++;
    }
    if (n > NAMED_MAX && used < len)
        snprintf(out + used, len - used, " and %d more", n - NAMED_MAX);
    return n;
}

/* Ends the job, naming the members of w's operation that do not answer. */
_Noreturn static void watch_report(const watched_wait *w, const bool *answers, double now) {
    bool *member = xcalloc((size_t)watch.size, sizeof *member);
    watch_members(w->comm, member);
    char who[1536], doing[PHASE_MAX + 160];
    const int n_silent = watch_name_silent(member, answers, who, sizeof who);
    free(member);
    snprintf(doing, sizeof doing, "%s%s%s%s", w->what, watch.phase[0] ? " (" : "", watch.phase,
             watch.phase[0] ? ")" : "");
    const double waited = now - w->since;
    if (n_silent == 0)
        FAIL("every rank still answers, yet %s has not completed for %.0f s (mpi_timeout_s = %g): "
             "the ranks wait in different collectives (a bug) or MPI itself is stuck; ending the "
             "job",
             doing, waited, watch.timeout_s);
    FAIL("rank%s %s %s not answered for %.0f s while the others wait in %s (mpi_timeout_s = %g): "
         "%s stopped (SIGSTOP, a debugger), hung or much slower than the timeout allows; ending "
         "the job\n  if one rank legitimately works that long while the others wait (a slow step, "
         "rank 0's checkpoint save or samples), raise mpi_timeout_s",
         n_silent > 1 ? "s" : "", who, n_silent > 1 ? "have" : "has", waited, doing,
         watch.timeout_s, n_silent > 1 ? "they are" : "it is");
}

/* The pending operation is due: the lowest rank that still answers reports;
 * a higher one gives it GRACE_S, then reports itself. */
static void watch_judge(watched_wait *w, const bool *answers, double now) {
    int lowest = watch.rank;
    for (int r = 0; r < watch.rank; r++)
        if (answers[r]) {
            lowest = r;
            break;
        }
    if (lowest == watch.rank || w->deferred) watch_report(w, answers, now);
    w->deferred = true;
    w->judge_at = now + GRACE_S;
}

static void watch_judge_beats(watched_wait *w, double now) {
    bool *answers = xcalloc((size_t)watch.size, sizeof *answers);
    for (int r = 0; r < watch.size; r++)
        answers[r] =
            r == watch.rank || (watch.heard[r] > 0 && now - watch.heard[r] <= ANSWER_WINDOW_S);
    watch_judge(w, answers, now);
    free(answers);
}

/* ------------------------------------------------------- the wait */

void mpi_watch_wait(int n, MPI_Request *reqs, MPI_Comm comm, const char *what) {
    if (watch.timeout_s <= 0) {
        MPI_CHECK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
        return;
    }
    int done = 0;
    MPI_CHECK(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    if (done) return;
    const double t0 = clock_s();
    watched_wait w = {.what = what, .comm = comm, .since = t0, .judge_at = t0 + watch.timeout_s};
    double next_beat = t0 + BEAT_AFTER_S;
    while (!done) {
        const double now = clock_s();
        if (now >= next_beat) {
            watch_beat();
            watch_listen(now);
            next_beat = now + BEAT_EVERY_S;
        }
        if (now >= w.judge_at) {
            watch_listen(now);
            watch_judge_beats(&w, now);
        }
        MPI_CHECK(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    }
}

/* ------------------------------------------------------- the end */

/* Every rank sends each other one last message and reads from each what is
 * still on its way up to that one (MPI keeps one sender's messages in
 * order): no beat is left unread at MPI_Finalize. A rank that does not get
 * there within the timeout is named as silent. */
static void watch_say_goodbye(void) {
    MPI_Request *sends = xcalloc((size_t)watch.size, sizeof *sends);
    bool *said = xcalloc((size_t)watch.size, sizeof *said);
    for (int r = 0; r < watch.size; r++)
        if (r == watch.rank)
            sends[r] = MPI_REQUEST_NULL;
        else
            MPI_CHECK(MPI_Isend(&beat_byte, 1, MPI_BYTE, r, TAG_BYE, watch.comm, &sends[r]));
    said[watch.rank] = true;
    const double t0 = clock_s();
    watched_wait w = {.what = "the last exchange before MPI_Finalize",
                      .comm = watch.comm,
                      .since = t0,
                      .judge_at = t0 + watch.timeout_s};
    for (int left = watch.size - 1; left > 0;) {
        int any = 0;
        MPI_Status st;
        MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, watch.comm, &any, &st));
        if (any) {
            char byte;
            MPI_CHECK(MPI_Recv(&byte, 1, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, watch.comm,
                               MPI_STATUS_IGNORE));
            if (st.MPI_TAG == TAG_BYE) {
                said[st.MPI_SOURCE] = true;
                left--;
            }
        } else if (clock_s() >= w.judge_at) {
            watch_judge(&w, said, clock_s());
        }
    }
    MPI_CHECK(MPI_Waitall(watch.size, sends, MPI_STATUSES_IGNORE));
    free(said);
    free(sends);
}

void mpi_watch_free(void) {
    if (watch.comm == MPI_COMM_NULL) return;
    if (watch.timeout_s > 0) watch_say_goodbye();
    MPI_Comm_free(&watch.comm);
    free(watch.hosts);
    free(watch.heard);
    watch.hosts = NULL;
    watch.heard = NULL;
    watch.timeout_s = 0;
}
