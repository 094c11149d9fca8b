/* step.h - one training step of a transformer on the discrete-event engine (sim.h): the layer that
 * turns model.h's job into operations, collectives and pipeline messages on GPU streams, runs them
 * and reports the step time, its breakdown and the memory over time.
 *
 * Contract
 * - Depends on model.h (the job and its per-layer costs) and sim.h (the engine and its network
 *   description); knows nothing of JSON, trace formats or the command line, and never prints.
 * - Prefix step_ (types step_*_t, constants STEP_*). No globals: every bit of state hangs off a
 *   step_t; two steps in one process are independent.
 * - Units: simulated times in picoseconds (sim_time_ps_t), results in seconds (_s), memory in GB
 *   (_gb), compute in TFLOP, buffers in GB as the model reports them.
 */
#ifndef STEPSIM_STEP_H
#define STEPSIM_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "sim.h"

/* ==== training step ============================================================================ */
/* One training step of a transformer (model.h's job) as operations on an engine (sim/step/step*.c,
 * sim/step/schedule.c, sim/step/placement.c; docs/run.md).
 *
 * - Workload: per pipeline stage, microbatch, pass and block, the layers of model_block_build as
 *   compute operations (roofline time comp_s + mem_exposed_s), contiguous layers without
 *   communication merged into one operation; each layer's tensor- and context-parallel collectives
 *   over their groups; pipeline sends of activations and gradients between stages; with
 *   training.embedding (1d only) the embedding on the first virtual stage and the final LayerNorm,
 *   output GEMM and loss on the last, from the model's edge layers; data-parallel communication by
 *   training.dp_comm, on its own stream: sharded (per block an all-gather of the weights before its
 *   first forward and a reduce-scatter of its gradients after its last backward), allreduce (one
 *   all-reduce of the stage's gradients after its last backward), allreduce-overlap (one bucket
 *   per block after its last backward) or sharded-overlap (Megatron-Core's buckets of model_dp_buckets
 *   per model chunk: a bucket's reduce-scatter after the last backward of its parts, its all-gather
 *   dispatched when the previous bucket's first forward starts), then with pp > 1 the tied
 *   embedding's sync between the first and last stage; in the corrected model the optimizer step,
 *   for each stage's own weights, after its data-parallel work (step_config_t.optimizer_step); with
 *   training.pp_comm_overlap on the interleaved schedule, sends as with p2p_async. Streams: 0 compute, 1
 * tensor/context- parallel collectives, 2 data-parallel collectives, 3..6 pipeline sends to the next stage,
 *   receives from the previous, sends to the previous, receives from the next (one stream per
 *   channel, so both ends order the messages alike and a receive is posted before its data arrives).
 * - Communication: SIM_COMM_ANALYTIC prices every collective with model_collective_time_s (members
 *   per NVLink domain from the placement) and every pipeline hop with the model's p2p time
 *   (reference: the model's averaged hop; corrected: each hop's own, in or out of the domain);
 *   SIM_COMM_NETWORK makes them flows on the network given to step_new.
 * - Collapsing identical ranks (STEP_COLLAPSE_AUTO): analytic mode simulates one GPU per pipeline
 *   stage (every tensor and data-parallel rank of a stage does the same thing at the same time, and
 *   every collective's duration depends only on its group's shape); network mode simulates one
 *   tensor rank ("rail") of every stage and replica when that is exact: the tensor groups' links
 *   carry no other traffic and are disjoint between groups, the other rails' data- and pipeline-
 *   parallel traffic uses links of their own, and every rail's routes map link for link onto the
 *   next rail's (checked on every pair that may communicate). Tensor collectives then take their
 *   idle-network time, measured once on the network. What was collapsed, and why not, is reported.
 *   Where collapsing is not exact AUTO simulates every GPU; only STEP_COLLAPSE_APPROX collapses
 *   anyway (collapse_exact 0, STEP_APPROX_WARNING).
 * - Times are the engine's (picoseconds). Results: the step time (the last operation's end), a
 *   breakdown of the critical GPU's timeline (the GPU whose operation ends last, the lowest id among several;
 *   with perturbations, among several, the one with the most compute time, then the lowest id) in which every
 *   instant goes to the highest-priority busy category: compute > tensor-parallel communication >
 *   pipeline communication > data-parallel communication > bubble and idle (a communication
 *   operation is busy from the moment its collective starts, not while it waits for its peers), so
 *   the parts add up to the step time; and per GPU the activation memory over time (allocated at the
 *   end of a forward operation, freed at the end of the matching backward one) and its peak.
 * - Mixtures of experts (1d, corrected): each MoE block's dispatch and combine all-to-alls (forward
 *   and backward) over the expert-parallel group, in the pass's chain on stream 1 (counted as
 *   tensor-parallel communication in the breakdown, group "ep" in step_op and the traffic), and the
 *   routed experts' gradients over the expert-data-parallel group after the dense weights' on stream 2;
 *   the groups are Megatron-Core's expert grid (model_expert_groups: ep consecutive ranks of a
 *   stage's tp x dp ranks numbered tp rank + tp x dp rank, placed as every rank). Analytic mode
 *   collapses the stages exactly; network mode simulates every GPU (the note says why).
 *   expert_skew draws a load per expert and microbatch (step_expert_shares): the busiest expert's
 *   GPU computes longer and the all-to-alls carry the busiest member's share; every GPU simulated.
 * - Memory and errors as the engine: step_new copies the job and the configuration; the network
 *   description's arrays are copied by the engine, its route context must outlive the step. Errors
 *   are SIM_EINVAL (err names the field and value), SIM_ENOMEM, SIM_EDEADLOCK. */

typedef enum step_schedule {
    STEP_SCHEDULE_1F1B = 0,        /* one-forward-one-backward (PipeDream-flush), warm-up pp - stage - 1 */
    STEP_SCHEDULE_GPIPE = 1,       /* every forward, then every backward */
    STEP_SCHEDULE_INTERLEAVED = 2, /* Megatron's interleaved 1F1B with v virtual stages per GPU */
    STEP_SCHEDULE_ZB_H1 = 3,       /* zero bubble ZB-H1 (Qi et al., arXiv 2401.10241): the backward split
                                      into B (input gradients) and W (weight gradients), 1F1B's F and B
                                      order, W deferred to fill the drain; v = 1 */
    STEP_SCHEDULE_ZB_V = 4,        /* zero bubble ZB-V (same paper, section 6): two chunks per GPU in a V
                                      (GPU i holds virtual stages i and 2 pp - 1 - i), B/W split; v = 2 */
    STEP_SCHEDULE_DUALPIPE = 5     /* DualPipe (DeepSeek-V3 report, arXiv 2412.19437): GPU i holds stage
                                      i and a copy of stage pp - 1 - i, half the microbatches enter at
                                      each end, B/W split; v = 2 (the chunks), pp even */
} step_schedule_t;

/* Parallel dimensions of a rank: TP is tp1 (1d: tp), CP is tp2 (2d: SUMMA rows; 2d-seqp: context). */
typedef enum step_dim { STEP_DIM_TP = 0, STEP_DIM_CP = 1, STEP_DIM_PP = 2, STEP_DIM_DP = 3 } step_dim_t;
#define STEP_DIM_COUNT 4

/* Rank placement: order[0] varies fastest. A GPU id is block * P + local, where P is the product of
 * the NVLink counts (nv_tp1 nv_tp2 nv_pp nv_dp): the local index runs over the in-domain parts of
 * the coordinates (x mod nv) and the block over the rest (x / nv), both in this order. With P equal
 * to the NVLink domain this puts exactly nv members of every group in each domain. */
typedef struct step_placement {
    step_dim_t order[STEP_DIM_COUNT]; /* default TP, CP, PP, DP (Megatron's: tensor innermost) */
} step_placement_t;

typedef enum step_collapse {
    STEP_COLLAPSE_AUTO = 0,  /* collapse where provably exact, else simulate every GPU (never approximate) */
    STEP_COLLAPSE_OFF = 1,   /* simulate every GPU */
    STEP_COLLAPSE_APPROX = 2 /* network: one rail even when not exact (tensor collectives at their
                               idle-network time, other rails assumed alike): only on request */
} step_collapse_t;

/* "auto", "off", "approx"; parse: SIM_OK or SIM_EINVAL. */
const char *step_collapse_name(step_collapse_t c);
int step_collapse_parse(const char *text, step_collapse_t *out);

/* What every output prints beside a result whose collapse is not exact (step_result_t's
 * collapse_exact 0, only with STEP_COLLAPSE_APPROX): the error measured against the full
 * simulation (docs/run.md, "Collapsing identical ranks"). */
#define STEP_APPROX_WARNING                                                                                  \
    "approximate: one tensor rank simulated for all; on dragonflies measured 3-64% below the full "          \
    "simulation (docs/run.md)"

typedef enum step_granularity {
    STEP_GRANULARITY_AUTO = 0,      /* LAYER unless that exceeds max_ops operations */
    STEP_GRANULARITY_LAYER = 1,     /* an operation per run of layers between collectives */
    STEP_GRANULARITY_MICROBATCH = 2 /* fixed-duration collectives folded into the compute operation of
                                      a microbatch pass (split only where a dependency attaches) */
} step_granularity_t;

/* Per-kernel jitter (sim/step/perturb.c; docs/run.md, "Perturbations"): every compute operation of
 * a simulated GPU takes its duration times a factor X drawn for that operation alone, keyed by
 * (seed, GPU, pass, model chunk, microbatch, the operation's index within that microbatch pass; the
 * optimizer step: pass 2) through splitmix64, so a draw does not depend on the order in which
 * anything is built. X has mean 1 and coefficient of variation cv:
 * - LOGNORMAL: X = exp(mu + sigma Z), sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2 (E X = 1, sd X = cv);
 * - NORMAL: X = 1 + cv Z, drawn again (the next draw of the same key) until X > 0.01, at most 64
 *   times, else 1 (the mean exceeds 1 slightly for cv above about 0.3).
 * Z is a standard normal from Box-Muller on two uniforms (53-bit, in (0, 1)). cv 0, or NONE: no
 * jitter at all (the step is built as without). */
typedef enum step_jitter_dist {
    STEP_JITTER_NONE = 0,
    STEP_JITTER_LOGNORMAL = 1,
    STEP_JITTER_NORMAL = 2
} step_jitter_dist_t;

typedef struct step_jitter {
    step_jitter_dist_t dist;
    double cv;     /* coefficient of variation, 0 <= cv <= 10 */
    uint64_t seed; /* every draw's key starts from it */
} step_jitter_t;

/* "none", "lognormal", "normal"; parse: SIM_OK or SIM_EINVAL. */
const char *step_jitter_name(step_jitter_dist_t d);
int step_jitter_parse(const char *text, step_jitter_dist_t *out);
/* The factor X of one compute operation (see above): key is step_jitter_key's. 1 without jitter. */
double step_jitter_factor(const step_jitter_t *j, int32_t gpu, uint64_t key);
/* The key of the index-th compute operation of (pass, chunk, microbatch) on a GPU (pass 2 and -1s:
 * the optimizer step). */
uint64_t step_jitter_key(int32_t pass, int32_t chunk, int32_t microbatch, int32_t index);
/* splitmix64's output function on x (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014; the constants of Vigna's splitmix64.c). */
uint64_t step_splitmix64(uint64_t x);

typedef struct step_config {
    sim_comm_mode_t comm;     /* SIM_COMM_NETWORK (default) or SIM_COMM_ANALYTIC */
    step_schedule_t schedule; /* default 1F1B */
    int32_t virtual_stages;   /* interleaved: v >= 2 (layers/pp divisible by v, microbatches by pp) */
    step_placement_t placement;
    int p2p_async;      /* 0 (default): a sender's compute waits for its send to finish */
    int optimizer_step; /* -1 (default): only in the corrected model; 0 never; 1 always */
    step_collapse_t collapse;
    step_granularity_t granularity;
    int64_t max_ops; /* operation budget for the granularity AUTO choice; 0: 1,500,000 */
    /* Memory budget of the simulation, GB: a step whose estimate (step_memory_estimate_gb) is larger
     * is refused before anything is built (SIM_EINVAL, one line naming both). 0: half the machine's
     * physical memory. */
    double max_memory_gb;
    /* Perturbations (docs/run.md, "Perturbations"); both unset: the unperturbed step.
     * compute_slowdown: NULL, or job->gpus factors > 0 (copied by step_new): every compute operation
     * of GPU g (the layers' compute and HBM time, SUMMA slices, the optimizer step; not the
     * fixed-time stand-ins of communication) takes compute_slowdown[g] times its time. jitter: per
     * compute operation, after the slowdown. Any factor other than 1 or any jitter breaks the
     * symmetry of identical ranks: STEP_COLLAPSE_AUTO then simulates every GPU (the collapse note
     * says so) and STEP_COLLAPSE_APPROX is refused (SIM_EINVAL). */
    const double *compute_slowdown;
    step_jitter_t jitter;
    /* Engine settings (fidelity, step overhead, link efficiency, chunk, seed); the step sets
     * comm_streams, comm_mode, has_system, system and compat itself. */
    sim_config_t engine;
    /* Expert load skew (a model with experts; docs/run.md, "Experts in the step"): 0 (default) none;
     * S > 0 routes the tokens of every (MoE block, microbatch) to the experts by step_expert_shares,
     * keyed by expert_seed. Not with a capacity factor. STEP_COLLAPSE_AUTO then simulates every GPU,
     * STEP_COLLAPSE_APPROX is refused. */
    double expert_skew;
    uint64_t expert_seed;
} step_config_t;

/* ---- expert load skew (sim/step/expert.c) --------------------------------------------------------- */

#define STEP_EXPERT_SKEW_MAX 8.0
#define STEP_EXPERT_MAX 1024
/* The token shares of the E experts of one MoE block (global index block) in one microbatch, with
 * skew S: the experts ranked by a permutation keyed by splitmix64 over (seed, block, microbatch),
 * the expert of rank r (0 the busiest) receives the share (r + 1)^-S / H, H = sum_{r=1..E} r^-S (a
 * Zipf law of exponent S; S = 0 is uniform, 1/E each). shares[0..E) by expert index. The expert-
 * parallel rank i holds experts i E/ep .. (i + 1) E/ep - 1 (Megatron-Core's local experts); its
 * load factor, factors[i] (NULL: not wanted), is ep times its experts' shares (mean 1): it computes
 * factors[i] times the uniform routing's expert tokens and receives as many in the dispatch. Returns
 * the largest factor, which sets the pace of the group. With ep = E it is E / H whatever the
 * permutation (the closed form); with ep = 1 it is 1. E in 1..STEP_EXPERT_MAX, ep dividing E. */
double step_expert_shares(int64_t experts, int64_t ep, double skew, uint64_t seed, int64_t block,
                          int64_t microbatch, double *shares, double *factors);

void step_config_default(step_config_t *cfg);

/* Bytes the simulation holds per operation (engine and step records, dependencies, collectives, at
 * the peak), about 44 measured on full runs of 2.6 to 71 million operations (docs/performance.md),
 * rounded up for safety; and the fixed part. */
#define STEP_MEMORY_BYTES_PER_OP 64.0
#define STEP_MEMORY_BASE_BYTES 2e8
/* The memory estimate for n_ops operations, GB. */
double step_memory_estimate_gb(int64_t n_ops);
/* The default memory budget, GB: topo_memory_budget_bytes (half the physical memory, or half the
 * address-space limit when smaller; 8 GB if unknown). */
double step_memory_budget_gb(void);

/* "1f1b", "gpipe", "interleaved", "zb-h1", "zb-v", "dualpipe" */
const char *step_schedule_name(step_schedule_t s);
/* "1f1b", "gpipe", "zb-h1", "zb-v", "dualpipe" (v = 2 for the last two), "interleaved" (v = 2) or
 * "interleaved:V". SIM_OK or SIM_EINVAL. */
int step_schedule_parse(const char *text, step_schedule_t *s, int32_t *virtual_stages);
const char *step_dim_name(step_dim_t d); /* "tp", "cp", "pp", "dp" */
/* A comma-separated order, innermost first, of tp (or tp1), cp (or tp2), pp, dp: "tp,cp,pp,dp".
 * Missing dimensions follow in the default order. SIM_OK or SIM_EINVAL. */
int step_placement_parse(const char *text, step_placement_t *out);
void step_placement_default(step_placement_t *out);
/* "tp,cp,pp,dp" into buf; returns buf. */
char *step_placement_format(const step_placement_t *p, char *buf, size_t size);
/* The GPU of the rank with coordinates x[STEP_DIM_*] (x[STEP_DIM_TP] < tp1, ...) for par (its
 * degrees and nv counts), and the inverse. O(1). */
int64_t step_placement_gpu(const step_placement_t *pl, const model_parallel_t *par,
                           const int64_t x[STEP_DIM_COUNT]);
void step_placement_coords(const step_placement_t *pl, const model_parallel_t *par, int64_t gpu,
                           int64_t x[STEP_DIM_COUNT]);

/* One entry of a stage's compute order: pass 0 forward, 1 backward, of a microbatch and a model
 * chunk (virtual stage chunk * pp + stage). A split schedule (step_schedule_splits) has three passes:
 * 0 forward (F), 1 the input gradients (B), 2 the weight gradients (W). */
typedef struct step_sched_item {
    int32_t pass, microbatch, chunk;
    /* DualPipe only (0 elsewhere: a message leaves when its pass ends and is received whenever it
     * arrives): the repository's blocking exchanges. Every compute call first waits for the sends and
     * receives posted since the one before, and a send completes once its receive is posted.
     * send_post - 1: how many items after this one its output is sent (a forward overlapped with a
     * backward sends after both); recv_post - 1: how many items before this one its input's receive
     * is posted (0: right before it; the posting waits for the end of the item before that). */
    int32_t send_post, recv_post;
} step_sched_item_t;

/* The compute order of one stage: step_schedule_items items. Interleaved needs v >= 2, pp >= 2 and m
 * a multiple of pp (Megatron's rule); ZB-V and DualPipe v = 2; the others v = 1. SIM_OK or SIM_EINVAL.
 * O(m v). ZB-H1: stage i runs 1F1B's pp - i - 1 warm-up forwards, then F, B and, once more than i
 * weight gradients wait, the oldest W; in the drain a W after every B, then the rest. At most pp
 * microbatches are held (forward done, W not) on any stage: 1F1B's peak. DualPipe: the eight phases
 * of the deepseek-ai/DualPipe repository's step (dualpipe.py), with each overlapped pair run as its
 * forward then its backward; pp + 1 stage microbatches held. ZB-V: the same eight phases on the V
 * (dualpipev.py's counts) with each pair run backward first, so a GPU holds at most 2 pp chunk
 * microbatches (pp stage microbatches, 1F1B's peak). */
int step_schedule_order(step_schedule_t s, int32_t pp, int32_t v, int32_t m, int32_t stage,
                        step_sched_item_t *items);
/* 1: the schedule splits the backward into B and W passes (ZB-H1, ZB-V, DualPipe); 0 otherwise. */
int step_schedule_splits(step_schedule_t s);
/* The items of one stage's order: passes x m x v, where DualPipe's chunks share the m microbatches
 * (chunk 0 runs microbatches 0 .. m/2 - 1 from the first stage on, chunk 1 m/2 .. m - 1 from the last).
 * ZB-V (pp >= 2, m >= 2 pp) and DualPipe (pp even, m even and >= 2 pp: the repository's rule) come
 * from step_schedule_order like the others. */
int64_t step_schedule_items(step_schedule_t s, int32_t v, int32_t m);
/* The virtual stage that chunk c of stage p runs, and the number of them: interleaved c pp + p of pp v;
 * ZB-V p (c = 0) or 2 pp - 1 - p (c = 1) of 2 pp; DualPipe, in the chunk's own direction, p (c = 0)
 * or pp - 1 - p (c = 1) of pp; the others p of pp. */
int32_t step_schedule_vstage(step_schedule_t s, int32_t pp, int32_t v, int32_t p, int32_t c);
int32_t step_schedule_vstages(step_schedule_t s, int32_t pp, int32_t v);
/* The stage and chunk holding virtual stage vs on chunk c's path (DualPipe keeps the chunk). */
void step_schedule_owner(step_schedule_t s, int32_t pp, int32_t v, int32_t vs, int32_t c, int32_t *p,
                         int32_t *c2);

typedef struct sim_step step_t;

/* Build the step of job (which must pass model_job_check) on the network net (required for
 * SIM_COMM_NETWORK, with net->n_gpus == job->gpus; ignored, may be NULL, for SIM_COMM_ANALYTIC).
 * cfg NULL: step_config_default. Return SIM_OK and *out, or SIM_EINVAL / SIM_ENOMEM with *out
 * NULL and one line in err. Complexity: linear in the operations built (plus, in network mode, one
 * route lookup per pair of GPUs that may communicate, for the collapse check). */
int step_new(const model_job_t *job, const step_config_t *cfg, const sim_network_desc_t *net, step_t **out,
             char *err, size_t err_size);
void step_free(step_t *s); /* accepts NULL */

/* Forward the engine's events to obs as well (e.g. a trace writer); copied; NULL clears. */
void step_set_observer(step_t *s, const sim_observer_t *obs);
/* Called whenever a simulated GPU's activation memory changes: gb is the GPU's total memory (static
 * weights, gradients and optimizer states plus the live activations), in GB. */
typedef void (*step_memory_fn)(void *ctx, sim_time_ps_t t_ps, int32_t gpu, double gb);
void step_set_memory_callback(step_t *s, step_memory_fn fn, void *ctx);
/* Report the run's progress to fn (sim_engine_set_progress on the step's engine); NULL clears. */
void step_set_progress(step_t *s, sim_progress_fn fn, void *ctx);

/* Run the step. SIM_OK, SIM_ENOMEM, SIM_EDEADLOCK (a bug: the schedule's DAG never deadlocks). */
int step_run(step_t *s);
const sim_engine_t *step_engine(const step_t *s);
/* The last error in one line ("" if none). */
const char *step_last_error(const step_t *s);

typedef enum step_collapsed {
    STEP_FULL = 0,   /* every GPU */
    STEP_STAGES = 1, /* one GPU per pipeline stage (analytic) */
    STEP_RAILS = 2   /* one tensor rank of every stage and replica (network) */
} step_collapsed_t;

typedef struct step_breakdown {
    double compute_s, exposed_tp_comm_s, exposed_pp_comm_s, exposed_dp_comm_s, bubble_idle_s;
} step_breakdown_t;

typedef struct step_result {
    double step_time_s;
    step_breakdown_t breakdown; /* parts add up to step_time_s */
    int32_t critical_gpu, critical_stage;
    int64_t microbatches;
    int32_t virtual_stages;
    /* what was simulated */
    int32_t gpus, simulated_gpus;
    step_collapsed_t collapsed;
    int collapse_exact;             /* 1: the collapse is exact (or nothing was collapsed) */
    char collapse_note[200];        /* why the collapse is exact, or why not */
    step_granularity_t granularity; /* resolved */
    int64_t operations, events, flows;
    double optimizer_s; /* the optimizer step's duration, 0 if none */
    /* memory per GPU, GB */
    double static_memory_gb;    /* weights + gradients + optimizer states (as the model) */
    double peak_activations_gb; /* the largest peak over simulated GPUs */
    double peak_memory_gb;      /* static + peak activations of that GPU */
    int32_t peak_memory_gpu;
} step_result_t;

/* After step_run. SIM_OK or SIM_ESTATE (not run yet). */
int step_result(const step_t *s, step_result_t *out);
/* Peak activation memory of one GPU (GB), -1 if the GPU was not simulated. GPU ids are the
 * engine's: the job's own, or on a fabric the network's (step_fabric_new). */
double step_gpu_peak_activations_gb(const step_t *s, int32_t gpu);

/* The k busiest links of the whole job by average utilisation over the step (ties: lower id first;
 * only links that carried bytes) into links[0..k) and utilization[0..k); returns how many, -1 out of
 * memory. Network mode, after step_run. Without a collapse: the engine's (sim_links_busiest). Under
 * an exact rail collapse, by symmetry, as if every GPU had been simulated: the simulated rail's
 * links and their images in every other rail carry the same load, and each tensor group's links
 * (NVLink included) the bytes of the tensor collectives its stage runs (counted from the schedule
 * and the layer plans, at either granularity). *partial is set to 1 when one of them was never
 * measured (not expected): then the tensor groups' links are left out. Under an approximate collapse: the
 * simulated rail's links only. O(links x k + operations). */
int32_t step_links_busiest(const step_t *s, int32_t k, int32_t *links, double *utilization, int *partial);

/* Bytes per link of the whole job over the step (wire bytes: the protocols' overhead included) into
 * bytes[0..links); under an exact rail collapse by symmetry as step_links_busiest (*partial as there),
 * else the engine's counters (under an approximate collapse: the simulated rail's links only).
 * SIM_OK, SIM_ESTATE (not run, or not network mode), SIM_ENOMEM. O(links + operations). */
int step_link_bytes(const step_t *s, double *bytes, int *partial);

/* The data bytes each parallel group's communication sent over the step (sim_coll_result_t's
 * sent_bytes: every flow's data bytes once per member pair it carries), the whole job's and per GPU
 * (the whole job's over its GPUs). A simulated GPU stands for the identical ranks a collapse left out;
 * collectives a rail collapse took off the network count their executions (from the schedule) times
 * one member's bytes measured on an idle network (partial 1: one was never measured, left out). A
 * ring all-reduce of S bytes on n GPUs sends 2 (n - 1) / n S per GPU. Network mode, after step_run:
 * SIM_OK, SIM_ESTATE, SIM_ENOMEM. O(operations). */
/* EP: the expert-parallel all-to-alls (dispatch and combine; a model with experts, has_ep 1); the
 * expert weights' gradients, reduced over the expert-data-parallel group, count as DP. */
enum {
    STEP_TRAFFIC_TP,
    STEP_TRAFFIC_CP,
    STEP_TRAFFIC_PP,
    STEP_TRAFFIC_DP,
    STEP_TRAFFIC_EP,
    STEP_TRAFFIC_GROUPS
};
typedef struct step_traffic {
    double sent_bytes[STEP_TRAFFIC_GROUPS];    /* all GPUs together */
    double per_gpu_bytes[STEP_TRAFFIC_GROUPS]; /* sent_bytes / the job's GPUs */
    int partial;
    int has_ep; /* 1: the job has experts (outputs print the ep row only then) */
} step_traffic_t;
int step_group_traffic(const step_t *s, step_traffic_t *out);

/* One block as the engine ran it (sim/step/block_view.c): the operations of stage 0's first GPU for
 * microbatch 0 and the first block that GPU computes, forward then backward, in start order, one row
 * per compute operation (a run of layers between collectives, as the plan merges them) with the
 * tensor- or context-parallel collectives that follow it (or their fixed-time stand-ins): their
 * duration and the part of it during which the GPU computed nothing (exposed). analytic_s sums the
 * model's per-layer time_s (compute, exposed memory and exposed communication) over the row's layers,
 * the estimate's per-layer table. An operation covering several blocks counts its share per block.
 * Needs layer granularity (SIM_EINVAL otherwise), after step_run (SIM_ESTATE); SIM_ENOMEM. With
 * analytic communication and no overlap each row's compute_s + exposed_comm_s equals analytic_s.
 * O(operations log operations). */
#define STEP_VIEW_MAX 128
typedef struct step_view_row {
    int pass;                             /* 0 forward, 1 backward */
    int layer0, layer1;                   /* first and last layer of the block table covered */
    const char *first_layer, *last_layer; /* their names (static in the step's block table) */
    int32_t blocks;                       /* blocks the compute operation covered */
    double compute_s;                     /* the compute operation's duration (its share per block) */
    double comm_s, exposed_comm_s;        /* the collectives after it: duration, not hidden by compute */
    double analytic_s;                    /* the per-layer table's time over layer0..layer1 */
} step_view_row_t;
typedef struct step_block_view {
    int32_t gpu, block; /* microbatch 0 */
    int n;
    step_view_row_t row[STEP_VIEW_MAX];
    double total_s[2], analytic_total_s[2]; /* per pass: compute + exposed; analytic */
} step_block_view_t;
int step_block_view(const step_t *s, step_block_view_t *out);

/* What an operation of the step is (for trace arguments). Strings are static. */
typedef enum step_op_kind {
    STEP_OP_COMPUTE = 0,
    STEP_OP_TP, /* a tensor- or context-parallel collective (or its fixed-time stand-in) */
    STEP_OP_PP, /* a pipeline send or receive */
    STEP_OP_DP, /* a data-parallel all-gather or reduce-scatter */
    STEP_OP_OPTIMIZER
} step_op_kind_t;

typedef struct step_op {
    step_op_kind_t kind;
    const char *pass;                     /* "fwd", "bwd", "opt", "wgrad" (W of a split schedule) or NULL */
    int32_t stage, chunk, microbatch;     /* -1 where not applicable */
    int32_t first_block, n_blocks;        /* blocks of the stage covered (first_block global in the model) */
    const char *first_layer, *last_layer; /* layer names of the block table (NULL for none) */
    const char *collective;               /* "allgather", ..., "p2p" or NULL */
    const char *group;                    /* "tp", "cp", "dp", "pp", "ep" or NULL */
    double flops_tflop, hbm_gb;           /* compute */
    double comm_gb;                       /* buffer of a collective or message (nccl-tests size) */
    double tp_comm_s;                     /* fixed-time collectives folded into a compute operation */
    double activations_gb;                /* allocated (+) or freed (-) at the end of the operation */
    const char *name;                     /* a workload's node name (step_new_workload), else NULL */
} step_op_t;

/* SIM_OK, or SIM_EINVAL for an id that is not one of the step's operations. */
int step_op(const step_t *s, sim_op_id_t op, step_op_t *out);
/* The operation's label as traces show it into buf (returns buf; "" for an unknown id): a workload's
 * node name; a compute operation of the model's step "PASS mb M block B FIRST..LAST" (or "blocks
 * B-C" for several); else the engine's name. */
char *step_op_label(const step_t *s, sim_op_id_t op, char *buf, size_t size);

/* ==== several jobs on one fabric ================================================================ */
/* Several jobs' steps on one engine over one network (sim/step/fabric.c; docs/run.md, "Several jobs
 * on one engine"): each job's operations are built by step_new's code onto the shared engine, job
 * after job, its GPU r on network GPU gpus[r]; the engine runs once, so the jobs' flows share the
 * links they meet on, max-min as any flows do.
 *
 * Contract
 * - jobs[i].job passes model_job_check; jobs[i].gpus holds job->gpus distinct network GPU ids, no GPU
 *   in two jobs (else SIM_EINVAL naming the job and the GPU); GPUs of no job stay idle.
 *   jobs[i].step is the job's configuration: communication must be network; collapse is forced off
 *   (every GPU simulated: identical ranks of one job are not identical once other jobs use their
 *   links); its .engine is ignored: every job runs on engine (the shared settings, NCCL's
 *   calibration included). The placement places the job's ranks on its own GPUs 0..gpus-1 first,
 *   and gpus[] maps those onto the network: a job's NVLink domain r (its GPUs r x D .. r x D + D-1,
 *   D = net->gpus_per_domain) is one domain of the network when the caller hands whole domains in
 *   order (the command line does; docs/run.md).
 * - Deterministic: job i's operations get the engine's ids after job i-1's, events run by (time,
 *   sequence); the same jobs give the same results and observer logs.
 * - step_fabric_step(f, i) is job i's step: step_result (step time = the job's last operation's end;
 *   critical_gpu and peak_memory_gpu are network GPU ids; events and flows are the whole engine's),
 *   step_op (the engine's operation ids), step_set_memory_callback (network GPU ids). step_run and
 *   step_links_busiest are not for these steps: step_fabric_run runs them all.
 * - Link bytes are kept per job (sim_engine_set_link_classes): step_fabric_link_bytes.
 * - Errors as step_new (err: one line, prefixed "job N: " for a job's), SIM_ESTATE for a second run.
 * - Memory: the engine and every job's step, freed by step_fabric_free (accepts NULL). The network's
 *   route context must outlive the fabric. Complexity: that of the jobs' steps together. */
typedef struct step_fabric_job {
    const model_job_t *job;
    const int32_t *gpus; /* [job->gpus]: the network GPU of each job GPU (copied) */
    step_config_t step;
} step_fabric_job_t;

typedef struct step_fabric step_fabric_t;

int step_fabric_new(const step_fabric_job_t *jobs, int32_t n_jobs, const sim_config_t *engine,
                    const sim_network_desc_t *net, step_fabric_t **out, char *err, size_t err_size);
void step_fabric_free(step_fabric_t *f);
int32_t step_fabric_jobs(const step_fabric_t *f);
step_t *step_fabric_step(const step_fabric_t *f, int32_t job);
/* The job a network GPU runs (-1: idle or out of range). O(1). */
int32_t step_fabric_job_of_gpu(const step_fabric_t *f, int32_t gpu);
/* Every engine event to obs as well (network GPU ids; copied; NULL clears). */
void step_fabric_set_observer(step_fabric_t *f, const sim_observer_t *obs);
void step_fabric_set_progress(step_fabric_t *f, sim_progress_fn fn, void *ctx);
/* Run every job. SIM_OK, SIM_ENOMEM, SIM_EDEADLOCK, SIM_ESTATE (run already). */
int step_fabric_run(step_fabric_t *f);
const sim_engine_t *step_fabric_engine(const step_fabric_t *f);
const char *step_fabric_last_error(const step_fabric_t *f);
/* Bytes job carried on link over the run (0 before it). */
double step_fabric_link_bytes(const step_fabric_t *f, int32_t link, int32_t job);

/* ==== one simulated step, end to end =========================================================== */
/* The one way every command simulates a job on a topology (sim/step/simulate.c): the network of
 * the topology, NCCL's calibration from its link technologies, the step built, run and summed up.
 *
 * Contract
 * - job: model.h's, already checked (model_job_check). topo: a topology built by topo/ with exactly
 *   job->gpus GPUs, required for SIM_COMM_NETWORK and ignored (may be NULL) for SIM_COMM_ANALYTIC;
 *   it must outlive the call. Nothing is read from files and nothing is printed.
 * - opts->step is the step's configuration (comm, schedule, placement, collapse, granularity,
 *   fidelity in step.engine, ...). opts->calibrate: on a network, sim_config_nccl_topology(topo)
 *   sets NCCL's constants and link efficiencies on a copy of step.engine (docs/engine.md).
 *   opts->links: how many of the busiest links to name, 0..STEP_SIM_MAX_LINKS.
 *   opts->before_run (optional): called with the built step before it runs, e.g. to attach a trace
 *   writer (step_set_observer, step_set_memory_callback); a non-zero return ends the simulation and
 *   is returned unchanged (callers use positive codes of their own). opts->progress (optional):
 *   the run's progress (sim_engine_set_progress), with opts->progress_ctx; it changes nothing.
 * - Returns SIM_OK and fills *out; else a negative sim_status_t with out->failed_at telling the
 *   stage and out->error one line without a prefix: SIM_EINVAL from the network (more than 2^31
 *   GPUs or links; a network-mode call without a topology) or from building the step (the field
 *   and value), SIM_ENOMEM, SIM_EDEADLOCK or SIM_ESTATE from the run.
 * - Memory: out->stage_peak_activations_gb is allocated here (NULL if that failed): release it with
 *   step_sim_result_destroy, which accepts a zeroed or failed result.
 * - The busiest links are the whole job's (step_links_busiest), also under an exact collapse.
 * - Complexity: that of step_new and step_run, plus O(links x opts->links) for the busiest links. */
#define STEP_SIM_MAX_LINKS 64

typedef struct step_sim_options {
    step_config_t step;
    int calibrate;
    int32_t links;
    int (*before_run)(void *ctx, step_t *step);
    void *ctx;
    sim_progress_fn progress; /* optional: step_set_progress before the run */
    void *progress_ctx;
    /* optional: called with the step after it ran (before it is freed), e.g. for step_block_view; a
     * non-zero return ends the simulation as before_run's does */
    int (*after_run)(void *ctx, const step_t *step);
    /* step_simulate_jobs: instead of before_run, called with the built fabric before it runs */
    int (*before_run_fabric)(void *ctx, step_fabric_t *fabric);
    /* optional: simulate the workload of this source (step_new_workload_source, with job->system and
     * wl_compute, a step_wl_compute_t) instead of the job's step; the job gives only its system, and
     * the topology needs at least the workload's ranks; the step keeps none of it, so before_run may
     * release the source) */
    const struct step_wl_source *workload;
    int wl_compute;
} step_sim_options_t;

typedef enum step_sim_stage {
    STEP_SIM_OK = 0,
    STEP_SIM_AT_NETWORK = 1, /* describing the topology to the engine */
    STEP_SIM_AT_BUILD = 2,   /* step_new */
    STEP_SIM_AT_HOOK = 3,    /* opts->before_run */
    STEP_SIM_AT_RUN = 4      /* step_run and its result */
} step_sim_stage_t;

typedef struct step_sim_result {
    step_result_t step;  /* step time, breakdown, collapse, counts, memory */
    int calibrated;      /* 1: NCCL's calibration was applied */
    sim_config_t engine; /* the engine settings the step ran with */
    int32_t n_links;     /* busiest links named, busiest first */
    char link_names[STEP_SIM_MAX_LINKS][96];
    double link_utilization[STEP_SIM_MAX_LINKS]; /* average over the step, 0..1 */
    int links_partial; /* 1: the tensor groups' links are left out (step_links_busiest) */
    /* network mode: the named links' bytes and every link's together (step_link_bytes), and each
     * parallel group's bytes sent (step_group_traffic) */
    double link_bytes[STEP_SIM_MAX_LINKS];
    double total_link_bytes;
    int has_traffic; /* 1: the three above are filled (network mode) */
    step_traffic_t traffic;
    /* peak activations (GB) of every pipeline stage's first GPU (tensor, context and data rank 0,
     * always simulated): job->par.pp entries */
    double *stage_peak_activations_gb;
    step_sim_stage_t failed_at;
    char error[300];
} step_sim_result_t;

struct topo;
int step_simulate(const model_job_t *job, const struct topo *topo, const step_sim_options_t *opts,
                  step_sim_result_t *out);
void step_sim_result_destroy(step_sim_result_t *r);

/* Several jobs on one topology, end to end (sim/step/simulate.c, step_simulate's code): the network
 * and NCCL's calibration as step_simulate, the jobs' steps on one engine (step_fabric_new; each job's
 * configuration is jobs[i].step, opts->step.engine the shared engine settings), opts->before_run_fabric,
 * one run, then per job its step_result and the links where jobs met.
 *
 * - topo: any number of GPUs; jobs[i].gpus are its GPU ids. n_jobs 1 is a job alone on its GPUs
 *   (the baseline of a job among others: the same GPUs, nothing else running).
 * - The links where jobs met are the links that carried bytes of more than one job (met_total of
 *   them); the opts->links busiest by average utilisation over the run (the last job's end) are
 *   named (ties: lower id first), each with every job's bytes (met_job_bytes[i x n_jobs + j]).
 * - Returns SIM_OK and fills *out; else a negative status, out->failed_at and out->error (as
 *   step_simulate; a job's build error names it: "job N: ..."). step_jobs_result_destroy frees the
 *   arrays (accepts a zeroed or failed result). */
typedef struct step_jobs_result {
    int32_t n_jobs;
    step_result_t *jobs; /* [n_jobs] */
    int calibrated;
    sim_config_t engine;
    double end_s;                      /* the last job's step time */
    int64_t operations, events, flows; /* the whole engine's */
    int32_t met_total;                 /* links that carried bytes of more than one job */
    int32_t n_met;                     /* named below, busiest first */
    int32_t met_link[STEP_SIM_MAX_LINKS];
    char met_names[STEP_SIM_MAX_LINKS][96];
    double met_utilization[STEP_SIM_MAX_LINKS]; /* average over end_s, 0..1 */
    double *met_job_bytes;                      /* [n_met x n_jobs] */
    step_sim_stage_t failed_at;
    char error[300];
} step_jobs_result_t;

int step_simulate_jobs(const step_fabric_job_t *jobs, int32_t n_jobs, const struct topo *topo,
                       const step_sim_options_t *opts, step_jobs_result_t *out);
void step_jobs_result_destroy(step_jobs_result_t *r);

/* ==== workloads: per-rank operation DAGs (Chakra execution traces) ============================= */
/* A workload: per rank, a DAG of nodes (what a Chakra execution trace holds), independent of any
 * file format (docs/workloads.md). Owned by the caller; step_workload_free releases what
 * step_workload_* allocated. */
typedef enum step_wl_kind {
    STEP_WL_COMPUTE = 0,
    STEP_WL_SEND = 1,
    STEP_WL_RECV = 2,
    STEP_WL_COLL = 3
} step_wl_kind_t;
typedef enum step_wl_coll {
    STEP_WL_ALLREDUCE = 0,
    STEP_WL_ALLGATHER = 1,
    STEP_WL_REDUCESCATTER = 2,
    STEP_WL_ALLTOALL = 3,
    STEP_WL_BROADCAST = 4
} step_wl_coll_t;
typedef struct step_wl_node {
    uint64_t id; /* unique within its rank */
    step_wl_kind_t kind;
    int32_t name;        /* index into the workload's name table (step_workload_name); 0: "" */
    double duration_s;   /* COMPUTE: < 0 when unknown (then flops/bytes give it) */
    double flops;        /* COMPUTE: floating-point operations (num_ops), 0 unknown */
    double mem_bytes;    /* COMPUTE: bytes moved (tensor_size), 0 unknown */
    step_wl_coll_t coll; /* COLL */
    double comm_bytes;   /* SEND/RECV/COLL: bytes per rank as Chakra's comm_size */
    int32_t peer;        /* SEND: destination rank, RECV: source rank; -1 otherwise */
    int64_t tag;         /* SEND/RECV: comm_tag, matches a send with its receive */
    int32_t group;       /* COLL: index into groups, -1 = all ranks */
    int32_t n_deps;      /* data and control dependencies: ids of nodes of the same rank */
    int64_t deps_offset; /* into step_workload_t.deps */
    double start_hint_s; /* export only: simulated start time (informative), -1 if none */
} step_wl_node_t;
typedef struct step_wl_group {
    char name[64];
    int32_t n_ranks;
    int64_t ranks_offset; /* ranks in step_workload_t.group_ranks */
} step_wl_group_t;
typedef struct step_workload {
    int32_t n_ranks;
    int64_t *rank_nodes_offset; /* n_ranks + 1 prefix offsets into nodes */
    step_wl_node_t *nodes;
    uint64_t *deps; /* node ids, per node's deps_offset/n_deps */
    int32_t n_groups;
    step_wl_group_t *groups;
    int32_t *group_ranks;
    /* node names, each distinct name once (a node holds its index): name i is name_chars +
     * name_offset[i], NUL-terminated, at most 63 bytes; name 0 is "" (n_names 0: every name is "") */
    int32_t n_names;
    int64_t *name_offset; /* [n_names] */
    char *name_chars;
    struct step_wl_name_index *name_index; /* private to step_workload_name_add (NULL when unused) */
} step_workload_t;
void step_workload_free(step_workload_t *w); /* frees the arrays, zeroes w; accepts zeroed w */
/* The index of name in w's name table (*out), added when new: truncated to 63 bytes, "" is 0.
 * Amortised O(length) through a hash index kept in w->name_index until step_workload_free or
 * step_workload_names_done. SIM_OK, or SIM_ENOMEM (w unchanged). */
int step_workload_name_add(step_workload_t *w, const char *name, int32_t *out);
/* Frees the hash index of step_workload_name_add (the names stay; adding later rebuilds it). */
void step_workload_names_done(step_workload_t *w);
/* Name i of w: "" when i is 0 or out of range. */
const char *step_workload_name(const step_workload_t *w, int32_t i);

/* A workload as a step (sim/step/workload.c; docs/workloads.md): the one simulation pipeline runs an
 * imported DAG, and a built step hands its operations back as a workload.
 *
 * - Ranks: rank r is GPU r of net (network mode: net->n_gpus >= n_ranks, the GPUs above idle) or of
 *   the analytic stand-in (analytic mode: system required, domains of system->nvlink_size).
 * - Nodes: per rank in a topological order of its dependencies (the file's order where that is one,
 *   else the smallest-index-first order). COMPUTE on stream 0, one at a time in that order, for
 *   duration_s (STEP_WL_COMPUTE_TRACE), or (STEP_WL_COMPUTE_MODEL) where flops or mem_bytes are given
 *   the roofline of system: max(kernel_overhead_s + flops / (flop_efficiency x matrix peak),
 *   mem_bytes / HBM bandwidth); then the configuration's compute_slowdown and jitter (key: the node
 *   id). COLL: the engine's collective over its group (ranks in ring order; -1: every rank), the
 *   auto algorithm and protocol as the step's, size comm_bytes (nccl-tests' size); the k-th COLL of a
 *   group on each member is one collective (NCCL: collectives of a communicator match by issue
 *   order), on one stream per group (groups sharing a rank on different streams; tp and cp prefer
 *   stream 1, dp stream 2). SEND/RECV: matched by (src, dst, tag), the k-th send with the k-th
 *   receive; one stream per (tag, direction, peer) of a rank, numbered by tag, sends first (more
 *   than fit: one per (direction, peer)). Dependencies (data and control alike) become the
 *   engine's. The memory budget as step_new's, plus the import's own bytes per node.
 * - Errors: SIM_EINVAL with one line naming the rank, the node id and the field (cycles, dangling or
 *   self dependencies, duplicate ids, unmatched send/recv, collectives that differ between members
 *   or come in an order no stream assignment can run, group members out of range, more than 64
 *   streams on a GPU); SIM_ENOMEM. The workload is not kept: the step copies the node names it
 *   needs (at most 16,384 distinct; beyond, the kind's name).
 * - step_result, step_op (kind compute; COLL of a group named tp or cp: STEP_OP_TP, others
 *   STEP_OP_DP; SEND/RECV: STEP_OP_PP), traces, link reports and the what-ifs work as on a step of a
 *   job; memory figures are 0 (a workload carries none); microbatches 0.
 * - Built rank by rank (step_new_workload_source below): operations are added in rank order, each
 *   stream's in its rank's order; a collective is made by the first member to reach it (named after
 *   that member's node), a message when the later of its two ranks is built. O(nodes + deps) plus a
 *   sort of each rank's channels (and Kahn's order for a rank whose file order is not one). */
typedef enum step_wl_compute { STEP_WL_COMPUTE_TRACE = 0, STEP_WL_COMPUTE_MODEL = 1 } step_wl_compute_t;
const char *step_wl_compute_name(step_wl_compute_t c);               /* "trace", "model" */
int step_wl_compute_parse(const char *text, step_wl_compute_t *out); /* SIM_OK or SIM_EINVAL */
int step_new_workload(const step_workload_t *w, const step_config_t *cfg, const sim_network_desc_t *net,
                      const model_system_t *system, step_wl_compute_t compute, step_t **out, char *err,
                      size_t err_size);

/* The same import from a source that hands over one rank at a time (a reader that never holds the
 * whole workload; step_new_workload is built on it). shape gives n_ranks and the groups (n_groups,
 * groups, group_ranks; its nodes are not read); group_used[g] (g = 0..n_groups, the last being the
 * every-rank group -1) is 1 where some collective uses group g: it fixes the collectives' streams
 * before rank 0, and a collective on a group said unused, or a group said used that no collective
 * uses, is an error. rank(ctx, r, &w, ...) is called for r = 0, 1, ..., n_ranks - 1 in that order:
 * rank r's nodes are w->nodes[w->rank_nodes_offset[r] .. rank_nodes_offset[r + 1]) with w's name
 * table and deps (w->n_ranks == n_ranks; w's groups are not read: node.group indexes shape's); w
 * stays valid until the next call or the end of step_new_workload_source. rank returns SIM_OK, or
 * SIM_EINVAL / SIM_ENOMEM with one line in err (passed through). Memory: the step, one rank's nodes
 * (and the scratch to order them), the collectives' instances (12 bytes each) and the messages whose
 * peer's rank comes later with their dependencies. The memory budget is checked after every rank. */
typedef struct step_wl_source {
    const step_workload_t *shape;
    const uint8_t *group_used;
    int (*rank)(void *ctx, int32_t r, const step_workload_t **out, char *err, size_t err_size);
    void *ctx;
} step_wl_source_t;
int step_new_workload_source(const step_wl_source_t *src, const step_config_t *cfg,
                             const sim_network_desc_t *net, const model_system_t *system,
                             step_wl_compute_t compute, step_t **out, char *err, size_t err_size);

/* The step's operations as a workload (before or after step_run): rank r = GPU r, nodes in the
 * engine's order with the engine's operation ids; compute nodes with their durations (as simulated:
 * slowdowns and jitter included), FLOPs and HBM bytes; collectives with their group (distinct member
 * lists and kinds: tp, cp, dp, pp) and nccl-tests size; a pipeline message as a SEND and a RECV
 * sharing a tag; dependencies as the engine's plus, as control dependencies, the order of each GPU's
 * streams (the previous operation on the same stream). start_hint_s: the simulated start after the
 * run, -1 before. Refused (SIM_EINVAL, one line): a collapsed step (Chakra ETs are per rank: every
 * GPU must be simulated, --collapse off), a step on a shared engine, reduce or rooted broadcast
 * collectives. *out is filled (free with step_workload_free) only on SIM_OK. O(operations). */
int step_workload_export(const step_t *s, step_workload_t *out, char *err, size_t err_size);

/* The same export one rank at a time, holding one rank's nodes instead of the whole workload
 * (step_workload_export is built on it): _begin checks the step as step_workload_export does and
 * finds each GPU's operations and every group (4 bytes an operation; *out is set only on SIM_OK,
 * release it with _end, which accepts NULL); _rank fills *out (free with step_workload_free) with a
 * workload of step_workload_export_ranks(x) ranks where only rank r has nodes (exactly the nodes and
 * dependencies step_workload_export gives rank r, names in a table of their own) and every group
 * of the step. The step must outlive x and not change while x lives. Errors as
 * step_workload_export's (SIM_EINVAL with one line, SIM_ENOMEM). */
typedef struct step_wl_export step_wl_export_t;
int step_workload_export_begin(const step_t *s, step_wl_export_t **out, char *err, size_t err_size);
int32_t step_workload_export_ranks(const step_wl_export_t *x);
int step_workload_export_rank(step_wl_export_t *x, int32_t r, step_workload_t *out, char *err,
                              size_t err_size);
void step_workload_export_end(step_wl_export_t *x);

#endif
