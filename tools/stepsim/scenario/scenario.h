/* scenario.h - one stepsim scenario: built-in defaults, overlaid by a JSON file, overlaid by options.
 *
 * Contract
 * - scenario_t is caller-allocated. scenario_init() fills the built-in default scenario (gpt3_1T on
 *   4096 A100 GPUs, NVLink domains of 8, global batch 4096, 1d, tp 8, pp 32, mbs 1; dp and the nv
 *   counts derived). scenario_load_file() overlays a scenario JSON file, scenario_set_option() one
 *   command-line option ("--tp", "8"); later calls win. scenario_resolve() derives the degrees that
 *   were not given (the rules are in scenario_defaults_help()) and checks the job with
 *   model_job_check(). scenario_destroy() accepts NULL and a scenario whose scenario_init() was never
 *   completed, provided the struct was zeroed. The topology is parsed when it is given (a file it
 *   names is read then): a bad one fails the load or the option, before any command does work.
 * - Every field remembers where it came from (default, file, option, derived), so that an error names
 *   the file and JSON path ("run.json: parallel.tp: 6 does not divide heads (160)") or the option
 *   ("--tp: ...").
 * - Errors: functions return a stepsim exit code (CLI_OK, CLI_ERUNTIME, CLI_EUSAGE, CLI_ENORESULT) and
 *   on failure fill a cli_diag_t with exactly one line of text (no newline). Nothing here prints or
 *   exits.
 * - Units: as model.h (GB, TFLOP/s, GB/s, seconds). The scenario JSON uses the reference's system keys
 *   (docs/model-formulas.md, section 2), so element_size is in GB per element (2e-9).
 */
#ifndef STEPSIM_SCENARIO_H
#define STEPSIM_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "model.h"
#include "topo.h"

/* Exit codes of every stepsim command (docs/cli.md, "Exit codes"). */
enum { CLI_OK = 0, CLI_ERUNTIME = 1, CLI_EUSAGE = 2, CLI_ENORESULT = 3 };

/* One diagnostic line for stderr, without the trailing newline. */
typedef struct cli_diag {
    char msg[512];
} cli_diag_t;

/* Fill d->msg printf-style and return code (so callers can `return cli_fail(d, 2, ...)`). */
int cli_fail(cli_diag_t *d, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The candidate of cands[0..n-1] closest to word (case-insensitive Levenshtein distance), or NULL
 * when none is close enough to be a plausible typo. Complexity O(n * len^2). */
const char *cli_suggest(const char *word, const char *const *cands, size_t n);

#include "perturb.h"

/* Where a value came from. */
typedef enum scenario_origin {
    SCN_FROM_DEFAULT = 0,
    SCN_FROM_FILE,
    SCN_FROM_OPTION,
    SCN_FROM_DERIVED
} scenario_origin_t;

/* Scenario fields that options and error messages address. */
typedef enum scenario_field {
    SCN_MODEL,
    SCN_SYSTEM,
    SCN_NVS,
    SCN_GPUS,
    SCN_GBS,
    SCN_STRATEGY,
    SCN_DP,
    SCN_TP,
    SCN_TP1,
    SCN_TP2,
    SCN_PP,
    SCN_MBS,
    SCN_NB,
    SCN_NV_TP,
    SCN_NV_TP1,
    SCN_NV_TP2,
    SCN_NV_DP,
    SCN_NV_PP,
    SCN_COMPAT,
    /* training.*: what a run does beyond the blocks (model_training_t; corrected model only) */
    SCN_RECOMPUTE,
    SCN_SEQPAR,
    SCN_ATTENTION,
    SCN_EMBEDDING,
    SCN_OPTIMIZER_STEP,
    SCN_INTERLEAVE,
    SCN_DP_COMM,
    SCN_GRAD_ACCUM,
    SCN_PRECISION,
    SCN_TP_COMM_OVERLAP,
    SCN_CP_COMM,
    SCN_PP_COMM_OVERLAP,
    SCN_PIPELINE,
    SCN_TOPOLOGY,
    SCN_EP,               /* parallel.ep: expert parallelism of a mixture of experts (0: none) */
    SCN_FP8_PARAM_GATHER, /* training.fp8_param_gather */
    SCN_ETP,              /* parallel.etp: expert tensor parallelism (0: none) */
    SCN_FIELD_COUNT
} scenario_field_t;

/* A scenario's topology as typed values, parsed once from the file's "topology" or --topology (or
 * compare's --topologies) by topo_spec_parse (topo_json.h): every name looked up, every key and type
 * checked and any topology file read, so that nothing is parsed later. What depends on the job (the
 * GPU count, the system's NVLink domain and bandwidths) is filled in by topo_spec_params. */
typedef enum topo_spec_form {
    TOPO_SPEC_NONE = 0, /* not given: the ideal topology of the system */
    TOPO_SPEC_PRESET,   /* a topology preset ("dgx-h100-superpod") */
    TOPO_SPEC_SHORTCUT, /* fat-tree, fat-tree-2:1, rail, dragonfly, dragonfly-ugal: sized to the job */
    TOPO_SPEC_KIND,     /* a kind with its defaults ("ideal", "rail-optimized", "torus") */
    TOPO_SPEC_GRAPHML,  /* a GraphML file (its path) */
    TOPO_SPEC_OBJECT    /* an object, inline or from a JSON file: a kind or preset and keys */
} topo_spec_form_t;

typedef struct topo_spec {
    topo_spec_form_t form;
    char where[300];        /* messages: "--topology", "run.json: topology", "topology" */
    char check_prefix[320]; /* where topo_params_check's issues point ("run.json: topology.") */
    char label[64];         /* the name as given, else the object's name, kind or preset, "object" */
    int is_name;            /* 1: given as a name (preset, shortcut, kind or file) */
    char word[256];         /* PRESET, SHORTCUT, KIND: the name; GRAPHML: the path */
    int shortcut;           /* SHORTCUT: its index in the list above */
    topo_kind_t kind;       /* KIND, OBJECT: the kind */
    char preset[64];        /* OBJECT: "preset", "" if none */
    char node[32];          /* OBJECT: "node" (a node preset), "" if none */
    int general_fat_tree;   /* OBJECT: fat-tree keys of the general form without "k" */
    uint64_t given;         /* OBJECT: bit i set when key i of topo_json.c's table was given */
    topo_params_t keys;     /* OBJECT: the given keys' values (graphml_path unused) */
    char file[256];         /* OBJECT: "file" (graphml) */
    int network_family;     /* OBJECT: "network" named a family (infiniband, slingshot): the network
                               links keep their bandwidth and latency */
} topo_spec_t;

struct scn_jobs; /* scenario_jobs.h: several jobs on one fabric ("jobs") */

/* parallel.strategy "all": every strategy (search only). */
#define SCN_STRATEGY_ALL (-1)

typedef struct scenario {
    char file[256];        /* the scenario file as named by the user, "" if none */
    char name[64];         /* "name" of the scenario file, "" if none */
    char description[256]; /* "description", "" if none */
    model_transformer_t model;
    model_system_t system;
    int strategy; /* model_strategy_t, or SCN_STRATEGY_ALL */
    model_compat_t compat;
    model_training_t training; /* the training.* fields (zero: the model's defaults) */
    /* integer fields indexed by scenario_field_t (SCN_NVS..SCN_NV_PP); 0 = not given */
    int64_t value[SCN_FIELD_COUNT];
    scenario_origin_t origin[SCN_FIELD_COUNT];
    int given[SCN_FIELD_COUNT]; /* 1 if the file or an option set the field */
    topo_spec_t topology;       /* "topology" / --topology, parsed; form TOPO_SPEC_NONE if none */
    scn_perturb_t perturb;      /* "perturbations" and their options (perturb.h); zero: none */
    struct scn_jobs *jobs;      /* "jobs" (scenario_jobs.h), owned; NULL if none */
    int pipeline_all;           /* training.pipeline_schedule "all": the search tries every schedule */
} scenario_t;

/* Fill the built-in default scenario. Returns CLI_OK, or CLI_ERUNTIME if a preset is missing. */
int scenario_init(scenario_t *scn, cli_diag_t *diag);
void scenario_destroy(scenario_t *scn);

/* Make cJSON allocate through the project's wrappers (alloc.h), so its allocations are counted and
 * can be failed like the rest; cli_main calls it first. */
void scenario_json_hooks(void);

/* Overlay the JSON scenario file at path. CLI_EUSAGE for a missing file, broken JSON (with line and
 * column), unknown keys, wrong types or bad values; CLI_ERUNTIME for a read error or no memory. */
int scenario_load_file(scenario_t *scn, const char *path, cli_diag_t *diag);

/* Read and parse the JSON file at path (kind names it in messages: "scenario", "grid"). On CLI_OK
 * *root is the document (caller frees with cJSON_Delete); CLI_EUSAGE for a missing file or broken
 * JSON (with line and column), CLI_ERUNTIME for a read error or no memory. */
int scenario_json_read(const char *path, const char *kind, cJSON **root, cli_diag_t *diag);

/* Overlay a parsed JSON object (the same keys as a file); source names it in messages. */
int scenario_load_json(scenario_t *scn, const cJSON *root, const char *source, cli_diag_t *diag);

/* Overlay one option. option is the long name with its dashes ("--tp"); value its text. Returns
 * CLI_EUSAGE for a bad value or an option that is no scenario field. */
int scenario_set_option(scenario_t *scn, const char *option, const char *value, cli_diag_t *diag);

/* Overlay a complete layout (every degree and NVLink count of p, as model_search_run returns it), as
 * if each had been given by origin. For 1d the tp and nv.tp fields are set; for 2d and 2d-seqp tp1,
 * tp2 and their nv counts (tp follows), and nb for 2d. */
void scenario_set_layout(scenario_t *scn, const model_parallel_t *p, scenario_origin_t origin);

/* Option name of a field ("--tp") and its scenario JSON path ("parallel.tp"). */
const char *scenario_field_option(scenario_field_t f);
const char *scenario_field_path(scenario_field_t f);

/* Resolve to a job for estimate: derive missing degrees, check with model_job_check. Returns CLI_OK,
 * CLI_EUSAGE (invalid), or CLI_ENORESULT (dp*tp*pp != gpus). */
int scenario_resolve(scenario_t *scn, model_job_t *job, cli_diag_t *diag);

/* Resolve to a job for search (job->par is left all ones; the degrees of the scenario are ignored)
 * and the strategy mask (1 << model_strategy_t): the scenario's parallel.strategy, or every strategy
 * when it was not given or is "all". Checks the model and system with model_job_check. */
int scenario_resolve_search(scenario_t *scn, model_job_t *job, unsigned *mask, cli_diag_t *diag);

/* The system in effect, with the scenario's NVLink domain (nvlink_size / --nvs) as the job gets it:
 * what the ideal topology and the shortcuts are built from in every command. */
void scenario_system(const scenario_t *scn, model_system_t *out);

/* A readable name of the model / system in effect: the preset or object name, or "custom". */
/* 1 if the optimizer step was given (by the file, an option, or derived as cmd_sim_scenario does):
 * the outputs then echo the training options even at their defaults (--optimizer-step off), since
 * its default differs between the estimating and the simulating commands. */
int scenario_optimizer_step_given(const scenario_t *scn);
const char *scenario_model_name(const scenario_t *scn);
const char *scenario_system_name(const scenario_t *scn);

/* Multi-line text: how missing degrees and nv counts are derived (for --help). Static storage. */
const char *scenario_defaults_help(void);

#endif
