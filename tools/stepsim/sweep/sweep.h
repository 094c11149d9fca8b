/* sweep.h - `stepsim sweep`: a grid of scenarios, one JSON line per point, resumable, shardable, MPI.
 *
 * Contract (shared by sweep.c, sweep_grid.c, sweep_point.c and sweep_mpi.c; not used elsewhere)
 * - A grid (sweep_grid_t) is loaded and validated completely before anything runs: every point is
 *   built, its scenario parsed and its id computed, so that a bad grid exits 2 with one line naming
 *   the grid file, the JSON path and the value, and the output file is never created.
 * - Points are numbered 0..n_points-1: first the cartesian product of "vary" (the first key varies
 *   slowest, as nested loops in file order), then the "points" list. --shard I/N keeps the points
 *   whose number is I modulo N.
 * - A point's id is the FNV-1a 64-bit hash (16 hex digits) of its command, its canonical resolved
 *   scenario (keys sorted at every level, printed by cJSON_PrintUnformatted) and its canonical
 *   command options (every option of the command, defaults included), separated by newlines.
 * - One output line per point, built by sweep_point_line(): {"id", "command", "scenario", "options",
 *   "result"} or the same with "error" and "exit_code" instead of "result". Lines are deterministic:
 *   the same point gives the same bytes in a serial, sharded or MPI run.
 * - The output file (sweep_out_t) is append-only: each line is written whole by one write() to an
 *   O_APPEND descriptor and then fdatasync'ed; --resume reads it, cuts a torn last line and skips
 *   the points whose ids it holds. A write lock (fcntl) keeps two sweeps off the same file.
 * - Errors: functions return a stepsim exit code (CLI_*) and fill a cli_diag_t. Nothing here exits.
 */
#ifndef STEPSIM_SWEEP_H
#define STEPSIM_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "scenario.h"

/* The most points one grid may have (ids are kept in memory: 8 bytes each). */
#define SWEEP_MAX_POINTS 1000000

/* ---- commands a grid can run (sweep_point.c) ------------------------------------------------- */

/* The most option names of one command in a grid (its grid options and its scenario options). */
#define SWEEP_MAX_OPTION_NAMES 96

typedef enum sweep_option_kind { SWEEP_OPT_BOOL, SWEEP_OPT_INT, SWEEP_OPT_TEXT } sweep_option_kind_t;

/* A command option that is not a scenario field ("top", "layers"): its name is the option table's
 * (options.h) without the dashes, so it means what the command-line option means; a flag is BOOL. */
typedef struct sweep_option {
    const char *name;
    sweep_option_kind_t kind;
    int64_t def, min, max; /* default and range (BOOL: 0/1) */
    const char *text_def;  /* TEXT: the default, or NULL for none (then only given ones are kept) */
} sweep_option_t;

/* One point: the resolved scenario (canonical, may hold the sweep-only "parallel.layout": "search")
 * and the canonical options. On CLI_OK *result is the command's --json object (caller frees); on
 * failure the code and diag describe it (and *result is NULL). */
typedef int (*sweep_point_fn)(const cJSON *scenario, const cJSON *options, cJSON **result, cli_diag_t *diag);

typedef struct sweep_command {
    const char *name;
    sweep_point_fn run;            /* NULL: not available yet (why says why) */
    const sweep_option_t *options; /* the non-scenario options, NULL-name terminated */
    int takes_degrees;             /* options may set parallel degrees (--dp, --tp, ...) */
    const char *why;               /* for run == NULL */
    int (*check)(const cJSON *options, cli_diag_t *diag); /* the options' values, or NULL */
} sweep_command_t;

/* The command's grid options, NULL-name terminated, by command name (NULL for none): for the test
 * that they are entries of the option table. */
const sweep_option_t *sweep_command_options(const char *name);

/* The command named name, or NULL. */
const sweep_command_t *sweep_command_find(const char *name);
/* "estimate, search, run" into buf. */
void sweep_command_list(char *buf, size_t n);

/* Sweep-only layout marker: a copy of scenario without "parallel.layout" (and without "parallel" if
 * nothing else is left), ready for scenario_load_json; *searched tells whether the marker was there.
 * NULL if out of memory. */
cJSON *sweep_loadable_scenario(const cJSON *scenario, int *searched);

/* ---- grids (sweep_grid.c) -------------------------------------------------------------------- */

typedef struct sweep_axis {
    const char *path;    /* the vary key, a dotted scenario path (points into doc) */
    const cJSON *values; /* its non-empty array (in doc) */
    size_t n;            /* cJSON_GetArraySize(values) */
} sweep_axis_t;

typedef struct sweep_grid {
    char path[256];             /* the grid file as named */
    cJSON *doc;                 /* the parsed file (owned) */
    const sweep_command_t *cmd; /* "command" */
    const cJSON *base;          /* "scenario" (in doc), or NULL: the built-in defaults */
    sweep_axis_t *axes;         /* "vary", in file order */
    size_t n_axes;
    const cJSON *points;     /* "points" (in doc), or NULL */
    cJSON *options;          /* canonical command options (owned) */
    cJSON *scenario_options; /* options that set scenario fields: {path: value} (owned) */
    size_t n_vary;           /* points of the product (0 without "vary") */
    size_t n_points;         /* all points */
    uint64_t *ids;           /* n_points ids */
} sweep_grid_t;

/* Read, validate and expand the grid file at path. On failure (CLI_EUSAGE for any grid error,
 * CLI_ERUNTIME for I/O or memory) the grid is left destroyable. Complexity: O(points) scenario parses. */
int sweep_grid_load(sweep_grid_t *g, const char *path, cli_diag_t *diag);
void sweep_grid_destroy(sweep_grid_t *g);

/* The resolved, canonical scenario of point index (caller frees), or NULL if out of memory. */
cJSON *sweep_grid_point(const sweep_grid_t *g, size_t index);

/* FNV-1a 64-bit of a byte string, continuing from h (start with SWEEP_FNV_OFFSET). */
#define SWEEP_FNV_OFFSET UINT64_C(0xcbf29ce484222325)
uint64_t sweep_fnv1a(uint64_t h, const char *s, size_t n);

/* What a point's line records: a result, a result where nothing fits in memory ("fits": false), or
 * an error ("error" and "exit_code" instead of "result"). */
enum { SWEEP_LINE_RESULT = 0, SWEEP_LINE_ERROR = 1, SWEEP_LINE_NOFIT = 2 };

/* Run point index and build its whole output line, ending in '\n' (*line is malloc'ed, caller
 * frees). *point_error is what the line records (SWEEP_LINE_*). Returns CLI_OK, or
 * CLI_ERUNTIME when the line itself cannot be built (out of memory). */
int sweep_point_line(const sweep_grid_t *g, size_t index, char **line, size_t *len, int *point_error,
                     cli_diag_t *diag);

/* ---- a run (sweep.c) ------------------------------------------------------------------------- */

typedef struct sweep_args {
    const char *grid_path;
    const char *out_path;
    int resume, force, progress, quiet, json;
    long shard_i, shard_n; /* 0 and 1 without --shard */
} sweep_args_t;

typedef struct sweep {
    sweep_args_t args;
    sweep_grid_t grid;
    FILE *err;    /* progress and warnings */
    int out_fd;   /* -1 until opened (rank 0 only under MPI) */
    size_t *todo; /* point indices this run computes, in order */
    size_t n_todo;
    size_t selected;               /* points of this shard */
    size_t already;                /* points of this shard already in the file (--resume) */
    size_t foreign_lines;          /* lines of the file whose id is not a point of this grid */
    size_t truncated_bytes;        /* torn last line cut by --resume */
    size_t written, errors;        /* lines written by this run, and how many of them are errors */
    size_t nofit;                  /* ... and how many are results where nothing fits */
    int ranks;                     /* 1, or the MPI world size */
    double start_s;                /* monotonic time when the command started */
    struct cli_progress *progress; /* output/progress.h: shown on a terminal, or with --progress */
} sweep_t;

/* Open the output (creating it, truncating it with --force, or reading it with --resume) and fill
 * todo. Call after sweep_grid_load. */
int sweep_open_output(sweep_t *sw, cli_diag_t *diag);
/* Append one whole line (with its '\n') and flush it to disk; counts it by point_error (SWEEP_LINE_*)
 * and updates progress. */
int sweep_write_line(sweep_t *sw, const char *line, size_t len, int point_error, cli_diag_t *diag);
/* Progress and ETA on err through output/progress.h (a terminal, or --progress; never with --quiet):
 * points done of the points to do, and errors; final ends the display. */
void sweep_progress(sweep_t *sw, int final);
/* The summary on out (text, or one JSON object with --json). */
int sweep_summary(const sweep_t *sw, FILE *out, cli_diag_t *diag);
double sweep_now_s(void);

/* ---- MPI (sweep_mpi.c) ----------------------------------------------------------------------- */

/* The world size when this process was started by mpirun/srun with more than one rank (from
 * OMPI_COMM_WORLD_SIZE or PMI_SIZE), else 0. Reads the environment only: MPI is not initialised. */
long sweep_mpi_world_size(void);
/* Run the sweep over MPI: every rank loads the grid, rank 0 opens the output, hands point indices out
 * dynamically and writes every line; workers compute points and return their lines. Without MPI
 * built in: CLI_EUSAGE with a message saying so. Non-zero ranks leave diag empty. */
int sweep_mpi_run(sweep_t *sw, FILE *out, cli_diag_t *diag);

#endif
