/* perturb.h - a scenario's "perturbations" object and the options that add to it (docs/what-if.md,
 * docs/cli.md "Perturbations").
 *
 * Contract
 * - scn_perturb_t is plain data inside scenario_t (scenario.h): copying a scenario copies it.
 *   Grouped by part: the seed (every random choice), the stragglers (gpus entries and jitter:
 *   perturb_gpus.c), the slow and failed links (perturb_links.c, applied to the topology where it is
 *   built: perturb_links_apply).
 * - Parsing: scn_parse_perturbations (perturb.c) dispatches the object's keys, one small function
 *   per part; options go through scn_perturb_option. Syntax and ranges are checked when given; what
 *   depends on the job (a GPU or node beyond it) when the step configuration is made
 *   (scenario_perturb_step). Errors are one line naming the file or option, the field and the value
 *   (CLI_EUSAGE).
 * - "The scenario without its perturbations" is scenario_clear_perturbations: the baseline of every
 *   what-if (run, compare) is the same scenario with it applied.
 */
#ifndef STEPSIM_PERTURB_H
#define STEPSIM_PERTURB_H

#include <stdint.h>

#include "perturb_links.h"
#include "step.h"

#define SCN_PERTURB_MAX_GPUS 16 /* gpus entries (file and options together) */

typedef enum scn_slow_kind { SCN_SLOW_GPUS = 0, SCN_SLOW_NODES = 1, SCN_SLOW_FRACTION = 2 } scn_slow_kind_t;

/* One entry of perturbations.gpus: every compute operation of the chosen GPUs takes slowdown times
 * its time. */
typedef struct scn_slow {
    scn_slow_kind_t kind;
    char ranges[128]; /* GPUS, NODES: the ranges as given ("0-7,64") */
    double fraction;  /* FRACTION: 0 < fraction <= 1 of the job's GPUs, chosen by the seed */
    double slowdown;  /* > 0 */
    char where[160];  /* "run.json: perturbations.gpus[1]" or "--slow-gpus" */
    int index;        /* its position among the entries as given (the fraction's random key) */
} scn_slow_t;

typedef struct scn_jitter {
    int given;
    step_jitter_dist_t dist;
    double cv;
    char where[160];
} scn_jitter_t;

typedef struct scn_perturb {
    uint64_t seed; /* perturbations.seed / --seed; 1 when not given */
    int seed_given;
    /* stragglers (perturb_gpus.c) */
    int n_slow;
    scn_slow_t slow[SCN_PERTURB_MAX_GPUS];
    scn_jitter_t jitter;
    /* slow and failed links (perturb_links.c) */
    scn_links_t links;
} scn_perturb_t;

struct scenario;
struct cli_diag;
struct scn_src;
struct cJSON;
struct model_job;

/* perturb.c: the "perturbations" object (keys seed, gpus, jitter, links). */
int scn_parse_perturbations(struct scenario *scn, const struct scn_src *src, const struct cJSON *obj);
/* 1 if option is one of the perturbation options (--slow-gpus, --slow-nodes, --slow-fraction,
 * --jitter, --seed, --slow-links, --fail-links); scn_perturb_set_option applies it (gpus and links
 * entries append, --jitter and --seed replace). */
int scn_perturb_is_option(const char *option);
int scn_perturb_set_option(struct scenario *scn, const char *option, const char *value, struct cli_diag *d);
/* Whether the scenario has any perturbation (an entry, or jitter with cv > 0). */
int scenario_has_perturbations(const struct scenario *scn);
/* The same scenario without its perturbations (the baseline). */
void scenario_clear_perturbations(struct scenario *scn);
/* The same on the perturbations alone (compare keeps a copy of them): entries, label, and every
 * label joined by "; " into buf (cut with "..." when it does not fit). */
int scn_perturb_entries(const scn_perturb_t *p);
void scn_perturb_label(const scn_perturb_t *p, int k, char *buf, size_t size);
void scn_perturb_describe(const scn_perturb_t *p, char *buf, size_t size);
/* The entries whose cost is reported one by one: the gpus entries in order, the links entries in
 * order, then the jitter (cv > 0). */
int scenario_perturbation_entries(const struct scenario *scn);
/* Keep only entry k (scenario_perturbation_entries' order); the seed stays. */
void scenario_keep_perturbation(struct scenario *scn, int k);
/* A short label of entry k: "gpus 0-7,64 x1.25", "nodes 3 x2", "fraction 0.01 x1.1",
 * "links leaf0->spine0 failed", "links class:global x0.25", "links fraction:0.02:leaf-spine x0.5",
 * "jitter lognormal cv 0.05". */
void scenario_perturbation_label(const struct scenario *scn, int k, char *buf, size_t size);

/* perturb_links.c: "perturbations.links" (an array of entries) and --slow-links / --fail-links. */
int scn_links_parse_json(scn_links_t *links, const struct scn_src *src, const struct cJSON *v,
                         const char *path);
int scn_links_option(scn_links_t *links, const char *option, const char *value, struct cli_diag *d);

/* perturb_gpus.c */
int scn_parse_perturb_gpus(struct scenario *scn, const struct scn_src *src, const struct cJSON *v);
int scn_parse_perturb_jitter(struct scenario *scn, const struct scn_src *src, const struct cJSON *v);
/* --slow-gpus RANGES:FACTOR, --slow-nodes RANGES:FACTOR, --slow-fraction F:FACTOR, --jitter DIST:CV. */
int scn_perturb_gpus_option(struct scenario *scn, const char *option, const char *value, struct cli_diag *d);
/* The step's perturbations for job: cfg->compute_slowdown (allocated into *factors, NULL when no
 * gpus entry; the caller frees it after the step is built) and cfg->jitter. Nodes are the job's
 * NVLink domains (system.nvlink_size GPUs). A fraction f slows round(f x gpus) GPUs (at least one):
 * those with the smallest splitmix64 keys of (seed, entry index, GPU), so the choice of an entry does
 * not depend on the other entries. A GPU in several entries takes the product of their factors.
 * CLI_EUSAGE naming the entry, the field and the value for a GPU or node beyond the job. */
int scenario_perturb_step(const struct scenario *scn, const struct model_job *job, step_config_t *cfg,
                          double **factors, struct cli_diag *d);
/* How many GPUs of job have a factor other than 1 (after scenario_perturb_step's rules). */
int64_t scenario_slowed_gpus(const double *factors, int64_t gpus);
/* Those GPUs as ranges ("3,17,40-41"; "" for none), allocated (the caller frees); NULL out of memory. */
char *scenario_slowed_list(const double *factors, int64_t gpus);

#endif
