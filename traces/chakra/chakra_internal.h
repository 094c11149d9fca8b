/* chakra_internal.h - shared by the Chakra codec's reader, writer and checker (private). */
#ifndef STEPSIM_CHAKRA_INTERNAL_H
#define STEPSIM_CHAKRA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "trace_chakra.h"

/* The attribute that carries a compute node's exact duration in seconds (a double), beside Chakra's
 * whole-microsecond duration_micros; and the GlobalMetadata attribute prefix of a process group's
 * ranks ("pg_ranks:" + pg_name, an integer list; doc_string = the group's display name). */
#define CHAKRA_ATTR_DURATION_S "stepsim_duration_s"
#define CHAKRA_ATTR_PG_RANKS "pg_ranks:"
/* The GlobalMetadata attribute (bool true) that marks a set's groups complete: the pg_ranks
 * definitions are exactly the process groups the nodes' collectives use (every group defined is
 * used by a collective, every collective names a defined group, none is of every rank: pg_name ""
 * or "0"), and every file of the set has the same definitions. The streaming reader then knows the
 * groups from rank 0's metadata alone and checks the claim as it reads; without it, opening a set
 * decodes every rank once more (trace_chakra_reader_open). */
#define CHAKRA_ATTR_GROUPS_COMPLETE "stepsim_groups_complete"

/* Largest duration the engine's picosecond clock (int64) holds, in microseconds and seconds. */
#define CHAKRA_MAX_DURATION_US 9.2e12
#define CHAKRA_MAX_DURATION_S 9.2e6
/* 2^63: integers stored as int64 in the file must be below it. */
#define CHAKRA_TWO_63 9223372036854775808.0

/* Make err one line: every control character (a newline in a name read from a file, say) becomes
 * '?'. Called on every error the codec returns. */
void chakra_one_line(char *err, size_t err_size);

/* Check the dependencies of rank r's nodes: ids unique, every dependency a node of the rank, no
 * cycle. label(ctx, r) names the rank's origin ("t/ar.3.et" or "rank 3"); n_data (may be NULL)
 * gives, per node of the rank, how many of its deps came from data_deps (the rest from ctrl_deps),
 * to name the field. Returns TRACE_OK, TRACE_EINVAL (err filled) or TRACE_ENOMEM. */
/* trace_chakra_check in parts: the ranks and groups (not the nodes), and rank r's nodes and
 * dependencies (r in range). TRACE_OK or TRACE_EINVAL with one line in err. */
int chakra_check_shape(const step_workload_t *w, char *err, size_t err_size);
int chakra_check_rank(const step_workload_t *w, int32_t r, char *err, size_t err_size);
int chakra_check_rank_deps(const step_workload_t *w, int32_t r, const char *label, const int32_t *n_data,
                           char *err, size_t err_size);

/* The reader's threads: trace_chakra_read decodes on chakra_default_threads() threads (the online
 * processors, at most CHAKRA_MAX_THREADS) when the rank files hold CHAKRA_THREADS_MIN_BYTES or more
 * (below, starting threads costs more than it saves), else on the caller's thread;
 * chakra_read_threads is the same read on `threads` threads (1: on the caller's thread only; 0:
 * trace_chakra_read's choice). The workload, the error and its message do not depend on the number
 * of threads. */
#define CHAKRA_MAX_THREADS 4
#define CHAKRA_THREADS_MIN_BYTES ((int64_t)1 << 20)
int chakra_default_threads(void);
int chakra_read_threads(const char *path, int threads, step_workload_t *out, char *err, size_t err_size);
/* trace_chakra_reader_open on `threads` decoding threads (as chakra_read_threads). */
int chakra_reader_open_threads(const char *path, int threads, trace_chakra_reader_t **out, char *err,
                               size_t err_size);

#endif
