/* sweep_mpi.c - `stepsim sweep` under mpirun: rank 0 hands point indices out, workers return lines.
 *
 * Built with MPI when CMake finds it (STEPSIM_HAVE_MPI), otherwise a stub that says so. MPI is only
 * initialised when the environment says mpirun started more than one rank, so a plain
 * `stepsim sweep` never touches it.
 *
 * Protocol (tags below): every rank loads and validates the grid itself (it is small, and this keeps
 * the messages to indices and lines); rank 0 alone opens the output and plans the points (shard,
 * --resume). An MPI_Allreduce of the set-up status lets every rank stop together if anything failed.
 * Rank 0 then keeps each worker two messages ahead: it sends two at the start and one reply (the
 * next index, or STOP when none is left) for every line a worker returns, so a worker always has its
 * next index queued while rank 0 writes. Every worker therefore receives exactly two STOPs and quits
 * after the second. Between messages rank 0 runs points itself (on a 2-core machine `mpirun -np 2`
 * would otherwise leave a core idle); a worker never waits on it because its next index is queued.
 * Lines are built by the same function as in a serial run, so the file equals a serial run's, in
 * completion order instead of point order.
 */
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

long sweep_mpi_world_size(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end = NULL;
        long n = v ? strtol(v, &end, 10) : 0;
        if (v && *v && end && *end == '\0' && n > 1)
            return n;
    }
    return 0;
}

#ifndef STEPSIM_HAVE_MPI

int sweep_mpi_run(sweep_t *sw, FILE *out, cli_diag_t *diag) {
    (void)sw;
    (void)out;
    return cli_fail(
        diag, CLI_EUSAGE,
        "launched under mpirun with %ld ranks, but this stepsim was built without MPI; allowed: run "
        "it without mpirun, or rebuild with Open MPI installed (libopenmpi-dev)",
        sweep_mpi_world_size());
}

#else

#include <mpi.h>
#include <pthread.h>
#include <time.h>

enum { TAG_WORK = 1, TAG_STOP = 2, TAG_LINE = 3, TAG_ERROR_LINE = 4, TAG_FAIL = 5, TAG_NOFIT_LINE = 6 };

/* ---- workers --------------------------------------------------------------------------------- */

static int worker(const sweep_t *sw) {
    int stops = 0;
    char *pending = NULL; /* the line of the previous Isend, freed once it completed */
    MPI_Request req = MPI_REQUEST_NULL;
    while (stops < 2) {
        long index = 0;
        MPI_Status st;
        MPI_Recv(&index, 1, MPI_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP) {
            stops++;
            continue;
        }
        char *line = NULL;
        size_t len = 0;
        int point_error = 0, tag;
        cli_diag_t d;
        d.msg[0] = '\0';
        if (index < 0 || (size_t)index >= sw->grid.n_points) {
            tag = TAG_FAIL;
            cli_fail(&d, CLI_ERUNTIME, "internal error: point index %ld out of range", index);
        } else if (sweep_point_line(&sw->grid, (size_t)index, &line, &len, &point_error, &d) != CLI_OK) {
            tag = TAG_FAIL;
        } else {
            tag = point_error == SWEEP_LINE_ERROR   ? TAG_ERROR_LINE
                  : point_error == SWEEP_LINE_NOFIT ? TAG_NOFIT_LINE
                                                    : TAG_LINE;
        }
        if (tag == TAG_FAIL) {
            free(line);
            line = strdup(d.msg);
            len = line ? strlen(line) : 0;
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        free(pending);
        pending = line;
        MPI_Isend(line ? line : "", (int)len, MPI_CHAR, 0, tag, MPI_COMM_WORLD, &req);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    free(pending);
    return CLI_OK;
}

/* ---- rank 0 ---------------------------------------------------------------------------------- */

/* Shared by rank 0's two threads; everything below lock is guarded by it. */
typedef struct coordinator {
    sweep_t *sw;
    pthread_mutex_t lock;
    size_t next;        /* next position in sw->todo */
    size_t outstanding; /* indices sent to workers whose lines have not come back */
    int failed;         /* stop handing out work (rc and diag say why) */
    int rc;
    int computing; /* rank 0's compute thread is still running */
    cli_diag_t *diag;
} coordinator_t;

static void fail_locked(coordinator_t *c, int rc, const cli_diag_t *why) {
    if (!c->failed) {
        c->rc = rc;
        if (why && why != c->diag)
            *c->diag = *why;
    }
    c->failed = 1;
}

/* The next point to run, or 0 when none is left (or the run failed). */
static int take(coordinator_t *c, size_t *index) {
    pthread_mutex_lock(&c->lock);
    int ok = !c->failed && c->next < c->sw->n_todo;
    if (ok)
        *index = c->sw->todo[c->next++];
    pthread_mutex_unlock(&c->lock);
    return ok;
}

static void record(coordinator_t *c, const char *line, size_t len, int point_error) {
    pthread_mutex_lock(&c->lock);
    if (!c->failed) {
        int rc = sweep_write_line(c->sw, line, len, point_error, c->diag);
        if (rc)
            fail_locked(c, rc, NULL);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Rank 0 runs points too, in this thread, so that `mpirun -np 2` on two cores uses both; the main
 * thread keeps answering the workers meanwhile (MPI_THREAD_FUNNELED: only it calls MPI). */
static void *compute(void *arg) {
    coordinator_t *c = arg;
    size_t index;
    while (take(c, &index)) {
        char *line = NULL;
        size_t len = 0;
        int point_error = 0;
        cli_diag_t d;
        int rc = sweep_point_line(&c->sw->grid, index, &line, &len, &point_error, &d);
        if (rc) {
            pthread_mutex_lock(&c->lock);
            fail_locked(c, rc, &d);
            pthread_mutex_unlock(&c->lock);
        } else {
            record(c, line, len, point_error);
        }
        free(line);
    }
    pthread_mutex_lock(&c->lock);
    c->computing = 0;
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void send_next(coordinator_t *c, int dest) {
    size_t index;
    if (take(c, &index)) {
        long v = (long)index;
        pthread_mutex_lock(&c->lock);
        c->outstanding++;
        pthread_mutex_unlock(&c->lock);
        MPI_Send(&v, 1, MPI_LONG, dest, TAG_WORK, MPI_COMM_WORLD);
    } else {
        long none = -1;
        MPI_Send(&none, 1, MPI_LONG, dest, TAG_STOP, MPI_COMM_WORLD);
    }
}

/* Receive one message announced by st: write the line, reply to its sender. */
static void handle(coordinator_t *c, const MPI_Status *st) {
    int count = 0;
    MPI_Get_count(st, MPI_CHAR, &count);
    char *buf = malloc((size_t)count + 1);
    if (!buf)
        abort(); /* MPI has no way to drop a message it cannot store; a few kB */
    MPI_Recv(buf, count, MPI_CHAR, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    buf[count] = '\0';
    if (st->MPI_TAG == TAG_FAIL) {
        cli_diag_t d;
        cli_fail(&d, CLI_ERUNTIME, "rank %d: %s", st->MPI_SOURCE, buf);
        pthread_mutex_lock(&c->lock);
        fail_locked(c, CLI_ERUNTIME, &d);
        pthread_mutex_unlock(&c->lock);
    } else {
        record(c, buf, (size_t)count,
               st->MPI_TAG == TAG_ERROR_LINE   ? SWEEP_LINE_ERROR
               : st->MPI_TAG == TAG_NOFIT_LINE ? SWEEP_LINE_NOFIT
                                               : SWEEP_LINE_RESULT);
    }
    free(buf);
    pthread_mutex_lock(&c->lock);
    c->outstanding--;
    pthread_mutex_unlock(&c->lock);
    send_next(c, st->MPI_SOURCE);
}

static int coordinate(sweep_t *sw, int size, int threads, cli_diag_t *diag) {
    coordinator_t c;
    memset(&c, 0, sizeof c);
    c.sw = sw;
    c.diag = diag;
    pthread_t thread;
    if (pthread_mutex_init(&c.lock, NULL) != 0)
        return cli_fail(diag, CLI_ERUNTIME, "cannot create a mutex");
    c.computing = 1; /* before the thread starts: it clears it when it ends */
    int started = threads && pthread_create(&thread, NULL, compute, &c) == 0;
    if (!started)
        c.computing = 0; /* rank 0 only coordinates */
    for (int w = 1; w < size; w++) {
        send_next(&c, w);
        send_next(&c, w);
    }
    /* Poll rather than block: Open MPI's blocking calls spin and would take a core from the points. */
    const struct timespec nap = {0, 100000};
    for (;;) {
        MPI_Status st;
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            handle(&c, &st);
            continue;
        }
        pthread_mutex_lock(&c.lock);
        int done = c.outstanding == 0 && !c.computing && (c.failed || c.next >= sw->n_todo);
        pthread_mutex_unlock(&c.lock);
        if (done)
            break;
        nanosleep(&nap, NULL);
    }
    if (started)
        pthread_join(thread, NULL);
    pthread_mutex_destroy(&c.lock);
    return c.rc;
}

int sweep_mpi_run(sweep_t *sw, FILE *out, cli_diag_t *diag) {
    int rank = 0, size = 1, initialized = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&initialized);
    if (initialized)
        MPI_Query_thread(&provided);
    else if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return cli_fail(diag, CLI_ERUNTIME, "MPI_Init_thread failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sw->ranks = size;
    if (rank != 0)
        sw->progress = NULL;
    int rc = sweep_grid_load(&sw->grid, sw->args.grid_path, diag);
    if (!rc && rank == 0)
        rc = sweep_open_output(sw, diag);
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == CLI_OK) {
        rc = rank == 0 ? coordinate(sw, size, provided >= MPI_THREAD_FUNNELED, diag) : worker(sw);
        if (rank == 0) {
            sweep_progress(sw, 1);
            if (!rc)
                rc = sweep_summary(sw, out, diag);
        }
    } else if (rank == 0 && rc == CLI_OK) {
        rc = cli_fail(diag, worst,
                      "%s: another MPI rank could not load the grid; allowed: a grid file that "
                      "every rank can read",
                      sw->args.grid_path);
    } else {
        rc = worst;
    }
    if (rank != 0) {
        /* Rank 0 reports and sets the exit code; the others stay quiet and exit 0. A worker that
         * exited non-zero first would make mpirun kill rank 0 before it printed its line. */
        diag->msg[0] = '\0';
        rc = CLI_OK;
    }
    MPI_Finalize();
    return rc;
}

#endif
