/* sweep.c - `stepsim sweep GRID.json --out FILE.jsonl`: arguments, the output file, the serial run.
 *
 * Nothing is lost: the grid is validated before the output file is touched; every line is appended
 * whole by one write() on an O_APPEND descriptor and fdatasync'ed before the next point starts, so a
 * kill at any moment leaves complete lines plus at most one torn last line, which --resume cuts off
 * (ftruncate) before it appends the points whose ids are not in the file yet. A write lock keeps a
 * second sweep off the same file. The file is a journal, not a document written at the end: that is
 * why it is not written to a temporary name and renamed like the other output files.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "input_check.h"
#include "output.h"
#include "progress.h"
#include "readfile.h"
#include "sweep.h"

double sweep_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cmd_sweep_about(FILE *out) {
    char list[128];
    sweep_command_list(list, sizeof list);
    fprintf(out,
            "Run a command (%s) over a grid of scenarios, in-process, and append one JSON\n"
            "line per point to FILE.jsonl: {\"id\", \"command\", \"scenario\", \"options\", \"result\"}, or "
            "\"error\" "
            "and\n"
            "\"exit_code\" instead of \"result\" when the point fails (the sweep goes on; exit 0 when every\n"
            "point has its line). A point where nothing fits in memory is a result with \"fits\": false\n"
            "(a search's empty list, or a searched layout's \"note\"), not an error. The id is a hash of\n"
            "the command, the resolved scenario and the options.\n",
            list);
}

void cmd_sweep_tail(FILE *out) {
    fprintf(
        out,
        "\ngrid file:\n"
        "  {\"command\": \"search\",\n"
        "   \"scenario\": {\"model\": \"gpt3_1T\", \"global_batch\": 4096},      base scenario (optional)\n"
        "   \"vary\": {\"system\": [\"A100\", \"H200\"], \"parallel.strategy\": [\"1d\", \"2d\"]},\n"
        "                                      cartesian product; dotted paths reach nested fields\n"
        "   \"points\": [{\"gpus\": 64, \"parallel\": {\"strategy\": \"2d-seqp\"}}],\n"
        "                                      whole scenarios added (their keys replace the base's)\n"
        "   \"options\": {\"top\": 1, \"compat\": \"reference\"}}   the command's options, without --\n"
        "  An option in a grid means what the command-line option of the command means (`stepsim\n"
        "  COMMAND --help`): flags take true or false, the others their value (a string or a number);\n"
        "  --json, --help and the output files (--trace, --csv, ...) are not options in a grid.\n"
        "  A degree \"search\" (\"parallel\": \"search\", \"parallel.tp\": \"search\", ...) makes estimate\n"
        "  evaluate the analytic model's best layout for that point (parallel.strategy restricts it).\n\n"
        "Under mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE > 1) rank 0 hands points out to the other ranks\n"
        "and writes the file; it also runs points between requests. See docs/sweep.md.\n");
}

/* ---- arguments ------------------------------------------------------------------------------- */

static int parse_shard(const char *v, sweep_args_t *a, cli_diag_t *d) {
    char *end = NULL;
    const char *slash = strchr(v, '/');
    long i = strtol(v, &end, 10);
    long n = slash ? strtol(slash + 1, &end, 10) : 0;
    int digits = v[0] >= '0' && v[0] <= '9' && slash && slash[1] >= '0' && slash[1] <= '9';
    if (!digits || *end || end == slash + 1)
        return cli_fail(d, CLI_EUSAGE, "--shard: \"%.60s\" is not I/N; allowed: I/N with integers 0 <= I < N",
                        v);
    if (n < 1 || n > SWEEP_MAX_POINTS)
        return cli_fail(d, CLI_EUSAGE, "--shard: %.60s: N = %ld is out of range; allowed: 1 <= N <= %d", v, n,
                        SWEEP_MAX_POINTS);
    if (i >= n)
        return cli_fail(d, CLI_EUSAGE,
                        "--shard: %.60s: I = %ld is not below N = %ld; allowed: 0 <= I < N "
                        "(shards count from 0)",
                        v, i, n);
    a->shard_i = i;
    a->shard_n = n;
    return CLI_OK;
}

static int from_args(const cli_args_t *p, sweep_args_t *a, cli_diag_t *d) {
    a->shard_n = 1;
    a->grid_path = p->file;
    a->out_path = p->value[CLI_OPT_OUT];
    a->resume = cli_has(p, CLI_OPT_RESUME);
    a->force = cli_has(p, CLI_OPT_FORCE);
    a->progress = cli_has(p, CLI_OPT_PROGRESS);
    a->quiet = cli_has(p, CLI_OPT_QUIET);
    a->json = cli_has(p, CLI_OPT_JSON);
    if (cli_has(p, CLI_OPT_SHARD)) {
        int rc = parse_shard(p->value[CLI_OPT_SHARD], a, d);
        if (rc)
            return rc;
    }
    if (!a->grid_path)
        return cli_fail(d, CLI_EUSAGE,
                        "missing grid file; allowed: stepsim sweep GRID.json --out FILE.jsonl");
    if (!a->out_path || !a->out_path[0])
        return cli_fail(d, CLI_EUSAGE, "--out: missing; allowed: --out FILE.jsonl (one JSON line per point)");
    if (a->resume && a->force)
        return cli_fail(d, CLI_EUSAGE, "--force: cannot be combined with --resume; allowed: one of the two");
    return CLI_OK;
}

/* ---- the output file ------------------------------------------------------------------------- */

static int by_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int has_id(const uint64_t *ids, size_t n, uint64_t id) {
    return n > 0 && bsearch(&id, ids, n, sizeof *ids, by_u64) != NULL;
}

/* The id of one line of an existing file, or -1 with a message. */
static int line_id(const sweep_t *sw, const char *text, size_t len, size_t line_no, uint64_t *id,
                   cli_diag_t *d) {
    cJSON *obj = cJSON_ParseWithLength(text, len);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "id");
    char *end = NULL;
    int ok = cJSON_IsString(v) && strlen(v->valuestring) == 16;
    if (ok) {
        *id = (uint64_t)strtoull(v->valuestring, &end, 16);
        ok = end && *end == '\0';
    }
    cJSON_Delete(obj);
    if (ok)
        return CLI_OK;
    return cli_fail(
        d, CLI_EUSAGE,
        "%s: line %zu: %s; allowed: lines written by stepsim sweep (repair or delete that line, or "
        "start over with --force)",
        sw->args.out_path, line_no, obj ? "no 16-digit hex \"id\"" : "not a JSON object");
}

/* --resume: the ids already in the file (sorted) and the torn tail cut off. */
static int read_existing(sweep_t *sw, off_t size, uint64_t **done, size_t *n_done, cli_diag_t *d) {
    char *buf = malloc((size_t)size);
    size_t have = 0, n = 0, cap = 0, line_no = 0, start = 0;
    int rc = CLI_OK;
    *done = NULL;
    *n_done = 0;
    if (!buf)
        return cli_fail(d, CLI_ERUNTIME, "%s: out of memory reading %lld bytes", sw->args.out_path,
                        (long long)size);
    while (have < (size_t)size) {
        ssize_t got = pread(sw->out_fd, buf + have, (size_t)size - have, (off_t)have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            free(buf);
            return cli_fail(d, CLI_ERUNTIME, "%s: read error: %s", sw->args.out_path,
                            got < 0 ? strerror(errno) : "file shrank");
        }
        have += (size_t)got;
    }
    for (size_t i = 0; i < have && !rc; i++) {
        if (buf[i] != '\n')
            continue;
        line_no++;
        if (i > start) {
            uint64_t id = 0;
            rc = line_id(sw, buf + start, i - start, line_no, &id, d);
            if (!rc && n == cap) {
                size_t ncap = cap ? 2 * cap : 1024;
                uint64_t *bigger = realloc(*done, ncap * sizeof *bigger);
                if (!bigger)
                    rc = cli_fail(d, CLI_ERUNTIME, "out of memory");
                else
                    *done = bigger, cap = ncap;
            }
            if (!rc)
                (*done)[n++] = id;
        }
        start = i + 1;
    }
    free(buf);
    if (!rc && start < have) {
        /* A torn last line (the sweep was killed inside its write): cut it; its point runs again. */
        if (ftruncate(sw->out_fd, (off_t)start) != 0 || fdatasync(sw->out_fd) != 0)
            rc = cli_fail(d, CLI_ERUNTIME, "%s: cannot cut the torn last line: %s", sw->args.out_path,
                          strerror(errno));
        sw->truncated_bytes = have - start;
    }
    if (!rc)
        qsort(*done, n, sizeof **done, by_u64);
    *n_done = n;
    return rc;
}

static int lock_output(const sweep_t *sw, cli_diag_t *d) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(sw->out_fd, F_SETLK, &fl) == 0)
        return CLI_OK;
    if (errno == EACCES || errno == EAGAIN)
        return cli_fail(d, CLI_ERUNTIME,
                        "%s: in use by another stepsim sweep (locked); allowed: one sweep per "
                        "output file (give each shard its own --out)",
                        sw->args.out_path);
    return CLI_OK; /* no locking on this file system: go on without */
}

/* The points this run computes: this shard's, minus those already in the file. */
static int plan(sweep_t *sw, const uint64_t *done, size_t n_done, cli_diag_t *d) {
    const sweep_grid_t *g = &sw->grid;
    sw->todo = malloc((g->n_points ? g->n_points : 1) * sizeof *sw->todo);
    if (!sw->todo)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    for (size_t i = 0; i < g->n_points; i++) {
        if ((long)(i % (size_t)sw->args.shard_n) != sw->args.shard_i)
            continue;
        sw->selected++;
        if (has_id(done, n_done, g->ids[i]))
            sw->already++;
        else
            sw->todo[sw->n_todo++] = i;
    }
    /* Lines of other grids (or of an edited one) stay in the file; say how many. */
    uint64_t *ids = malloc((g->n_points ? g->n_points : 1) * sizeof *ids);
    if (!ids)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    memcpy(ids, g->ids, g->n_points * sizeof *ids);
    qsort(ids, g->n_points, sizeof *ids, by_u64);
    for (size_t i = 0; i < n_done; i++)
        sw->foreign_lines += !has_id(ids, g->n_points, done[i]);
    free(ids);
    return CLI_OK;
}

int sweep_open_output(sweep_t *sw, cli_diag_t *d) {
    const char *path = sw->args.out_path;
    int flags = O_CREAT | O_APPEND | (sw->args.resume ? O_RDWR : O_WRONLY);
    struct stat st;
    uint64_t *done = NULL;
    size_t n_done = 0;
    sw->out_fd = open(path, flags, 0644);
    if (sw->out_fd < 0)
        return cli_fail(d, CLI_EUSAGE, "%s: cannot open the output: %s; allowed: a writable file path", path,
                        strerror(errno));
    int rc = lock_output(sw, d);
    if (!rc && fstat(sw->out_fd, &st) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "%s: %s", path, strerror(errno));
    if (!rc && !sw->args.resume && st.st_size > 0 && !sw->args.force)
        rc = cli_fail(d, CLI_EUSAGE,
                      "%s: exists and is not empty (%lld bytes); allowed: --resume to complete "
                      "it, --force to start over, or another --out",
                      path, (long long)st.st_size);
    if (!rc && sw->args.force && st.st_size > 0 && ftruncate(sw->out_fd, 0) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "%s: cannot truncate: %s", path, strerror(errno));
    if (!rc && sw->args.resume && st.st_size > (off_t)READFILE_JOURNAL_LIMIT_BYTES)
        rc = input_fail_too_large(path, "sweep output", (long long)st.st_size, READFILE_JOURNAL_LIMIT_BYTES,
                                  d);
    if (!rc && sw->args.resume && st.st_size > 0)
        rc = read_existing(sw, st.st_size, &done, &n_done, d);
    if (!rc)
        rc = plan(sw, done, n_done, d);
    free(done);
    if (!rc && sw->truncated_bytes)
        fprintf(sw->err, "stepsim sweep: %s: cut a torn last line (%zu bytes); its point runs again\n", path,
                sw->truncated_bytes);
    if (!rc && sw->foreign_lines)
        fprintf(sw->err, "stepsim sweep: %s: %zu lines are not points of %s; they are kept\n", path,
                sw->foreign_lines, sw->grid.path);
    return rc;
}

/* ---- progress and lines ---------------------------------------------------------------------- */

void sweep_progress(sweep_t *sw, int final) {
    if (!sw->progress)
        return;
    if (final) {
        cli_progress_end(sw->progress);
        return;
    }
    const size_t done = sw->written, total = sw->n_todo;
    char detail[96];
    snprintf(detail, sizeof detail, "%zu/%zu points (%.1f%%), %zu errors", done, total,
             total ? 100.0 * (double)done / (double)total : 100.0, sw->errors);
    cli_progress_count(sw->progress, total ? (double)done / (double)total : 1.0, detail);
}

int sweep_write_line(sweep_t *sw, const char *line, size_t len, int point_error, cli_diag_t *d) {
    const char *p = line;
    size_t left = len;
    while (left > 0) { /* one write() for the whole line; the loop only matters if it is cut short */
        ssize_t n = write(sw->out_fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return cli_fail(d, CLI_ERUNTIME, "%s: write error: %s (--resume cuts a torn last line)",
                            sw->args.out_path, n < 0 ? strerror(errno) : "nothing written");
        p += n;
        left -= (size_t)n;
    }
    if (fdatasync(sw->out_fd) != 0 && errno != EINVAL && errno != EROFS)
        return cli_fail(d, CLI_ERUNTIME, "%s: cannot sync to disk: %s", sw->args.out_path, strerror(errno));
    sw->written++;
    sw->errors += point_error == SWEEP_LINE_ERROR;
    sw->nofit += point_error == SWEEP_LINE_NOFIT;
    sweep_progress(sw, 0);
    return CLI_OK;
}

int sweep_summary(const sweep_t *sw, FILE *out, cli_diag_t *d) {
    const sweep_grid_t *g = &sw->grid;
    double wall = sweep_now_s() - sw->start_s;
    if (!sw->args.json) {
        char line[2048];
        snprintf(line, sizeof line,
                 "stepsim sweep: %s: %zu points of %s; shard %ld/%ld: %zu points, %zu already in %s", g->path,
                 g->n_points, g->cmd->name, sw->args.shard_i, sw->args.shard_n, sw->selected, sw->already,
                 sw->args.out_path);
        output_wrapped(out, 2, line);
        snprintf(line, sizeof line,
                 "wrote %zu lines (%zu results, %zu of them where nothing fits; %zu errors) to %s in %.2f s "
                 "with %d process%s",
                 sw->written, sw->written - sw->errors, sw->nofit, sw->errors, sw->args.out_path, wall,
                 sw->ranks, sw->ranks == 1 ? "" : "es");
        output_wrapped(out, 2, line);
        return CLI_OK;
    }
    json_writer_t w;
    json_start(&w, out);
    json_string(&w, "grid", g->path);
    json_string(&w, "out", sw->args.out_path);
    json_string(&w, "command", g->cmd->name);
    json_int(&w, "points", (int64_t)g->n_points);
    json_int(&w, "shard", sw->args.shard_i);
    json_int(&w, "shards", sw->args.shard_n);
    json_int(&w, "selected", (int64_t)sw->selected);
    json_int(&w, "already_done", (int64_t)sw->already);
    json_int(&w, "written", (int64_t)sw->written);
    json_int(&w, "results", (int64_t)(sw->written - sw->errors));
    json_int(&w, "results_nothing_fits", (int64_t)sw->nofit);
    json_int(&w, "errors", (int64_t)sw->errors);
    json_int(&w, "foreign_lines", (int64_t)sw->foreign_lines);
    json_int(&w, "truncated_bytes", (int64_t)sw->truncated_bytes);
    json_int(&w, "ranks", sw->ranks);
    json_number(&w, "wall_time_s", wall);
    return json_finish(&w) == 0 ? CLI_OK
                                : cli_fail(d, CLI_ERUNTIME, "out of memory while printing the summary");
}

/* ---- the serial run -------------------------------------------------------------------------- */

static int run_serial(sweep_t *sw, FILE *out, cli_diag_t *d) {
    int rc = sweep_grid_load(&sw->grid, sw->args.grid_path, d);
    if (!rc)
        rc = sweep_open_output(sw, d);
    for (size_t k = 0; k < sw->n_todo && !rc; k++) {
        char *line = NULL;
        size_t len = 0;
        int point_error = 0;
        rc = sweep_point_line(&sw->grid, sw->todo[k], &line, &len, &point_error, d);
        if (!rc)
            rc = sweep_write_line(sw, line, len, point_error, d);
        free(line);
    }
    if (sw->out_fd >= 0)
        sweep_progress(sw, 1);
    if (!rc)
        rc = sweep_summary(sw, out, d);
    return rc;
}

int cmd_sweep(const cli_args_t *p, FILE *out, FILE *err, cli_diag_t *d) {
    sweep_t sw;
    memset(&sw, 0, sizeof sw);
    cli_progress_t progress;
    sw.err = err;
    sw.out_fd = -1;
    sw.ranks = 1;
    sw.start_s = sweep_now_s();
    int rc = from_args(p, &sw.args, d);
    if (!rc) {
        cli_progress_init(&progress, err, "sweep", sw.args.quiet, sw.args.progress);
        sw.progress = &progress;
        rc = sweep_mpi_world_size() > 1 ? sweep_mpi_run(&sw, out, d) : run_serial(&sw, out, d);
    }
    if (sw.out_fd >= 0 && close(sw.out_fd) != 0 && !rc)
        rc = cli_fail(d, CLI_ERUNTIME, "%s: close: %s", sw.args.out_path, strerror(errno));
    free(sw.todo);
    sweep_grid_destroy(&sw.grid);
    return rc;
}
