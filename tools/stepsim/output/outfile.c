/* outfile.c - output files written to a unique temporary file beside the destination and renamed
 * into place; a signal removes the temporary files (outfile.h has the contract). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The one mutable global (outfile.h): live temporary paths, read by the signal handler. A slot's
 * path is written completely before live[slot] is set, and live[slot] is cleared before the slot is
 * reused; the updates happen with the handled signals blocked. */
static char g_tmp[OUTFILE_MAX_LIVE][OUTFILE_PATH_MAX];
static volatile sig_atomic_t g_live[OUTFILE_MAX_LIVE];

static const int SIGNALS[] = {SIGINT, SIGTERM, SIGHUP};

static void block(sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    for (size_t i = 0; i < sizeof SIGNALS / sizeof *SIGNALS; i++)
        sigaddset(&s, SIGNALS[i]);
    sigprocmask(SIG_BLOCK, &s, old);
}

static void unblock(const sigset_t *old) {
    sigprocmask(SIG_SETMASK, old, NULL);
}

static void on_signal(int sig) {
    for (int i = 0; i < OUTFILE_MAX_LIVE; i++)
        if (g_live[i])
            unlink(g_tmp[i]);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered when the handler returns: the process dies of sig */
}

void outfile_install_signal_handlers(void) {
    for (size_t i = 0; i < sizeof SIGNALS / sizeof *SIGNALS; i++) {
        struct sigaction old;
        if (sigaction(SIGNALS[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* e.g. SIGHUP under nohup: stays ignored */
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof SIGNALS / sizeof *SIGNALS; k++)
            sigaddset(&sa.sa_mask, SIGNALS[k]);
        sigaction(SIGNALS[i], &sa, NULL);
    }
}

const char *outfile_tmp_path(const outfile_t *of) {
    return of->slot >= 0 ? g_tmp[of->slot] : NULL;
}

/* "DIR/.NAME.XXXXXX" for path "DIR/NAME" (".NAME.XXXXXX" without a directory). */
static int template_of(const char *path, char *buf, size_t n) {
    const char *slash = strrchr(path, '/');
    const size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *name = path + dir_len;
    const int k = snprintf(buf, n, "%.*s.%s.XXXXXX", (int)dir_len, path, name);
    return k > 0 && (size_t)k < n && name[0] != '\0';
}

static int create(outfile_t *of, const char *option, const char *path, int keep_open, cli_diag_t *d) {
    of->option = option;
    of->path = path;
    of->slot = -1;
    of->f = NULL;
    char tmp[OUTFILE_PATH_MAX];
    if (!template_of(path, tmp, sizeof tmp))
        return cli_fail(d, CLI_EUSAGE,
                        "%s %s: not a file path (too long, or a directory); allowed: a writable "
                        "file path",
                        option, path);
    sigset_t old;
    block(&old);
    int slot = -1;
    for (int i = 0; i < OUTFILE_MAX_LIVE && slot < 0; i++)
        if (!g_live[i])
            slot = i;
    if (slot < 0) {
        unblock(&old);
        return cli_fail(d, CLI_ERUNTIME, "%s %s: more than %d output files open at once", option, path,
                        OUTFILE_MAX_LIVE);
    }
    const int fd = mkstemp(tmp);
    const int e = errno;
    if (fd >= 0) {
        memcpy(g_tmp[slot], tmp, strlen(tmp) + 1);
        atomic_signal_fence(memory_order_seq_cst);
        g_live[slot] = 1;
    }
    unblock(&old);
    if (fd < 0)
        return cli_fail(d, CLI_EUSAGE,
                        "%s %s: cannot create a file in that directory: %s; allowed: a writable "
                        "file path",
                        option, path, strerror(e));
    of->slot = slot;
    /* mkstemp makes the file 0600: give it the mode a plain fopen would */
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    if (!keep_open) {
        close(fd);
        return CLI_OK;
    }
    of->f = fdopen(fd, "w");
    if (!of->f) {
        const int e2 = errno;
        close(fd);
        outfile_discard(of);
        return cli_fail(d, CLI_ERUNTIME, "%s %s: %s", option, path, strerror(e2));
    }
    return CLI_OK;
}

int outfile_open(outfile_t *of, const char *option, const char *path, cli_diag_t *d) {
    return create(of, option, path, 1, d);
}

int outfile_reserve(outfile_t *of, const char *option, const char *path, cli_diag_t *d) {
    return create(of, option, path, 0, d);
}

static int sync_path(const char *p) {
    const int fd = open(p, O_RDONLY);
    if (fd < 0)
        return -1;
    const int s = fsync(fd);
    const int e = errno;
    close(fd);
    errno = e;
    return s;
}

int outfile_commit(outfile_t *of, cli_diag_t *d) {
    if (of->slot < 0)
        return cli_fail(d, CLI_ERUNTIME, "%s %s: not open", of->option, of->path);
    const char *tmp = g_tmp[of->slot];
    const char *what = "write";
    int failed = 0;
    if (of->f) {
        failed = fflush(of->f) != 0 || ferror(of->f);
        if (!failed && fsync(fileno(of->f)) != 0) {
            failed = 1;
            what = "sync";
        }
        const int e = errno;
        if (fclose(of->f) != 0 && !failed)
            failed = 1;
        else
            errno = e;
        of->f = NULL;
    } else if (sync_path(tmp) != 0) {
        failed = 1;
        what = "sync";
    }
    if (failed) {
        const int e = errno;
        outfile_discard(of);
        return cli_fail(d, CLI_ERUNTIME, "%s %s: cannot %s: %s", of->option, of->path, what, strerror(e));
    }
    sigset_t old;
    block(&old);
    const int renamed = rename(tmp, of->path) == 0;
    const int e = errno;
    if (!renamed)
        unlink(tmp);
    g_live[of->slot] = 0;
    unblock(&old);
    of->slot = -1;
    if (!renamed) /* a destination that is a directory is bad input; anything else a failure */
        return cli_fail(d, e == EISDIR ? CLI_EUSAGE : CLI_ERUNTIME, "%s %s: cannot rename into place: %s",
                        of->option, of->path, strerror(e));
    return CLI_OK;
}

void outfile_discard(outfile_t *of) {
    if (of->f) {
        fclose(of->f);
        of->f = NULL;
    }
    if (of->slot < 0)
        return;
    sigset_t old;
    block(&old);
    unlink(g_tmp[of->slot]);
    g_live[of->slot] = 0;
    unblock(&old);
    of->slot = -1;
}
