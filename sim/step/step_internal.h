/* step_internal.h - the training step's internal types, shared by sim/step*.c only (prefix step_).
 *
 * The step uses the engine through its public API (sim.h) only. Layout: step.c owns step_t
 * (configuration, the decisions, the engine, the observer, results), step_plan.c turns the block
 * table into per-pass plans, step_build.c emits the operations, step_collapse.c decides what can be
 * collapsed exactly and measures the idle-network time of collapsed collectives. */
#ifndef STEPSIM_STEP_INTERNAL_H
#define STEPSIM_STEP_INTERNAL_H

#include "step.h"

/* Streams of a GPU. */
enum {
    STEP_STREAM_COMPUTE = 0,
    STEP_STREAM_TP = 1,
    STEP_STREAM_DP = 2,
    STEP_STREAM_SEND_NEXT = 3,
    STEP_STREAM_RECV_PREV = 4,
    STEP_STREAM_SEND_PREV = 5,
    STEP_STREAM_RECV_NEXT = 6,
    STEP_COMM_STREAMS = 6
};

/* Collective groups of the step. DP is dp (1d, 2d) or tp2 x dp (2d-seqp). With experts (1d), EP is
 * the expert-parallel group and EDP the expert-data-parallel group of Megatron-Core's expert grid
 * (model_expert_groups): the stage's tp x dp ranks numbered q = tp rank + tp x dp rank, an ETP group
 * etp consecutive q, an EP group ep q etp apart within a block of ep etp, an EDP group the q equal
 * modulo ep etp. Not groups of dimensions: step_group_dims gives none for them, step_group_members
 * lists them (step_expert_member). */
typedef enum step_group {
    STEP_GROUP_TP = 0,
    STEP_GROUP_CP = 1,
    STEP_GROUP_DP = 2,
    STEP_GROUP_EP = 3,
    STEP_GROUP_EDP = 4,
    STEP_GROUP_ETP = 5,
    STEP_GROUP_COUNT = 6
} step_group_t;
/* step_meta_t.group of a pipeline message */
#define STEP_META_GROUP_PP 6

/* ---- plans ------------------------------------------------------------------------------------ */

typedef enum step_seg_kind {
    STEP_SEG_COMPUTE,
    STEP_SEG_COLL,
    STEP_SEG_SUMMA,
    STEP_SEG_OVERLAP
} step_seg_kind_t;

/* One step of a block's forward or backward pass, in execution order. COMPUTE: layers
 * [layer0..layer1] (in pass order) merged; COLL: collective `coll` of layer `layer0`, after that
 * layer's compute; SUMMA: a SUMMA layer (its compute `dur_s` = max(comp, mem) and its collectives
 * per panel); OVERLAP: a layer whose collectives (all of one group; `coll` 0 is the first) run in
 * chunks under it (tensor-parallel overlap, the context-parallel ring; model_overlap_t: its compute
 * in `chunks` pieces, a ring exchange's chunks - 1 steps before pieces 1.., or a pipelined chunk after
 * every piece; a step or chunk holds every collective's share, in order). */
typedef struct step_seg {
    step_seg_kind_t kind;
    int layer0, layer1;
    int coll; /* COLL, OVERLAP: index into the pass's colls */
    double dur_s, flops_tflop, hbm_gb, act_gb;
    int chunks;              /* OVERLAP: pieces of the GEMM */
    model_overlap_t overlap; /* OVERLAP: MODEL_OVERLAP_RING or MODEL_OVERLAP_PIPELINE */
} step_seg_t;

#define STEP_MAX_SEGS 256

typedef struct step_plan {
    step_seg_t seg[STEP_MAX_SEGS];
    int n;
} step_plan_t;

/* The parts of a stage's microbatch pass that have plans: a transformer block, the embedding (first
 * virtual stage) and the output layers (final LayerNorm, logits, loss; last virtual stage). */
typedef enum step_part { STEP_PART_BLOCK = 0, STEP_PART_EMBEDDING = 1, STEP_PART_OUTPUT = 2 } step_part_t;
#define STEP_PARTS 3

/* Layer ids: 0..n_layers-1 are the block's layers, STEP_EDGE_ID + i the block's edges[i]. */
#define STEP_EDGE_ID MODEL_BLOCK_LAYERS

/* Build the forward (pass 0) and backward (pass 1) plans of the n layers (ids id0..id0+n-1). */
/* checkpoint_gb >= 0: full recomputation, only that is kept from the forward to the backward. */
void step_plan_build(const model_layer_t *layers, int n, int id0, double checkpoint_gb, step_plan_t plans[2]);
/* The step group of a model collective (TP1 -> TP, TP2 -> CP, DP -> DP, EP -> EP). */
step_group_t step_group_of(model_group_t g);

/* ---- per-operation metadata ------------------------------------------------------------------- */

/* One operation's metadata as the builder writes it and step_op reads it (coll: the engine
 * collective it is a member of, -1). Stored compactly: step_rec_t per operation, the rest interned
 * in a table of step_info_t (a step has few distinct ones: every microbatch repeats them). */
typedef struct step_meta {
    int32_t gpu;
    int32_t coll; /* engine collective; -1 */
    int32_t stage, chunk, microbatch;
    int32_t first_block;
    int16_t n_blocks;
    int8_t kind; /* step_op_kind_t */
    int8_t pass; /* -1 none, 0 fwd, 1 bwd, 2 optimizer */
    int8_t layer0, layer1;
    int8_t coll_op; /* model_coll_op_t, -1 */
    int8_t group;   /* step_group_t, STEP_META_GROUP_PP for pp, -1 */
    int8_t fixed;   /* 1: a fixed-duration stand-in for communication (busy from its own start) */
    double flops_tflop, hbm_gb, comm_gb, tp_comm_s, act_gb;
} step_meta_t;

typedef struct step_info {
    int32_t chunk, microbatch, first_block;
    int16_t n_blocks;
    int8_t kind, pass, layer0, layer1, coll_op, group, fixed;
    double flops_tflop, hbm_gb, comm_gb, tp_comm_s, act_gb;
} step_info_t;

/* Per operation: its metadata's index into step_t.info (the GPU is the engine's, the stage the
 * GPU's). */
typedef struct step_rec {
    int32_t info;
} step_rec_t;

/* ---- fixed-duration collectives --------------------------------------------------------------- */

typedef struct step_fixed_key {
    int group; /* step_group_t */
    int op;    /* model_coll_op_t */
    double size_bytes;
    int root;
    double time_s;
    /* the bytes one execution on every group at once puts on each link it uses (network mode) */
    int32_t n_links;
    int32_t *links;
    double *bytes;
    double sent_bytes; /* data bytes one member sends in one execution (sim_coll_result_t) */
} step_fixed_key_t;

/* ---- the step --------------------------------------------------------------------------------- */

struct sim_step {
    model_job_t job;
    model_estimate_t est;
    step_config_t cfg;
    step_plan_t plans[STEP_PARTS][2]; /* [part][pass]; the edge parts are empty without embedding */
    int emb;                          /* 1: the embedding and output layers run (corrected, embedding) */
    model_dp_comm_t dp_comm;          /* MODEL_DP_SHARDED for the reference */
    int64_t n[STEP_DIM_COUNT];        /* sizes: tp1, tp2 (1 in 1d), pp, dp */
    int32_t pp, v, m, layers_per_stage, chunk_blocks;
    int32_t gpus, gpus_per_domain;
    /* networks */
    sim_network_desc_t net;
    sim_star_t star; /* analytic mode's stand-in network */
    sim_engine_t *e;
    /* what is collapsed */
    step_collapsed_t level;
    int collapse_exact;
    char collapse_note[200];
    int collapsed_dim[STEP_DIM_COUNT];
    /* an exact rail collapse's symmetry (step_collapse.c), for the link report: per collapsed dim
     * the link map of a shift by one (-1: no non-tensor traffic), per tensor kind the leader GPU of
     * the group owning a link (-1: none); NULL otherwise */
    int32_t *rail_map[2];
    int32_t *link_owner[2];
    int fixed_group[STEP_GROUP_COUNT]; /* 1: collectives of this group take a fixed time */
    step_granularity_t granularity;
    int64_t est_ops; /* step_estimate_ops at the chosen level and granularity */
    /* simulated GPUs: per stage, in stage-local order (free dims TP, CP, DP, innermost first) */
    int32_t per_stage;
    int32_t *stage_gpus;             /* [pp * per_stage] */
    int32_t *gpu_stage;              /* [gpus]: the stage of a simulated GPU, -1 */
    int64_t local_n[STEP_DIM_COUNT]; /* sizes of the free dims (1 if collapsed; 1 for PP) */
    /* fixed durations */
    step_fixed_key_t *fixed;
    int32_t n_fixed, cap_fixed;
    int32_t group_per_domain[STEP_GROUP_COUNT]; /* members of the group in one domain (analytic) */
    /* per plan segment whose collectives take fixed times: a COLL segment's collective, a SUMMA
     * layer's exposed communication (filled by step_build) */
    double seg_fixed_s[STEP_PARTS][2][STEP_MAX_SEGS];
    double optimizer_s; /* the model's: on the stage with the most parameters */
    /* operations: per operation a record, the rest interned (step_meta_put) */
    step_rec_t *rec;
    int32_t cap_rec;
    step_info_t *info;
    int32_t n_info, cap_info, last_info;
    int32_t *info_tab; /* open addressing over info indices, -1 empty */
    int64_t info_tab_cap;
    /* observer and memory */
    sim_observer_t user_obs;
    int has_user_obs;
    step_memory_fn mem_fn;
    void *mem_ctx;
    double static_gb;
    double *act_gb, *peak_act_gb; /* per GPU */
    /* perturbations (perturb.c): per-GPU compute factors ([gpus], NULL when all are 1), jitter */
    double *slow;
    int jitter_on, perturbed;
    int ran;
    char err[256];
    /* the engine's GPUs and operations: a step of its own owns its engine (GPU r of the job is
     * engine GPU r, its operations are all the engine's); a step of a fabric (step_fabric_new)
     * shares the engine with other jobs: its GPU r is engine GPU map[r] and its operations are the
     * ids [op0, op_end). Every GPU id in the step's arrays and results is the engine's. */
    int32_t engine_gpus;
    /* experts (1d MoE): ep and the expert-data-parallel size (step_group_size of EP, EDP); 1, 1 dense.
     * expert_skew: step_config_t's (0: none); the expert load factors of every (block, microbatch)
     * are drawn by step_expert_factors (expert.c). */
    int32_t ep, edp, moe;
    int32_t etp; /* expert tensor parallelism (step_group_size of ETP); 1 without */
    double expert_skew;
    uint64_t expert_seed;
    int32_t *map; /* [gpus]; NULL: identity */
    int own_engine;
    sim_op_id_t op0, op_end;
    /* a workload's step (step_new_workload): 1, and the node names the engine borrows */
    int workload;
    step_workload_t wl_names; /* only its name table: the distinct node names (step_workload_name_add) */
    char *wl_engine_names; /* the first WL_MAX_NAMES of them, where the engine borrows them (never moved) */
    int32_t *wl_op_name;   /* per operation (from op0): name index in wl_names less one, -1: none */
};

/* perturb.c: check and copy the configuration's perturbations (step_new); a compute operation's
 * duration on gpu (dur_s unchanged when the step is not perturbed). */
int step_perturb_init(step_t *s);
double step_perturb_s(const step_t *s, int32_t gpu, uint64_t key, double dur_s);

/* step.c */
/* Build job's step onto the shared engine e, its GPU r on engine GPU map[r] (copied; distinct, below
 * net->n_gpus); network communication, every GPU simulated. As step_new otherwise. */
int step_new_shared(const model_job_t *job, const step_config_t *cfg, const sim_network_desc_t *net,
                    sim_engine_t *e, const int32_t *map, step_t **out, char *err, size_t err_size);
/* The step's bookkeeping of an operation that ended (activation memory), for a fabric's observer. */
void step_op_ended(step_t *s, sim_time_ps_t t, const sim_op_info_t *op);
/* The shared engine ran: results may be asked for. */
void step_mark_ran(step_t *s);
int step_fail(step_t *s, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Reserve metadata for op ids up to (excluding) n_ops. SIM_OK or SIM_ENOMEM. */
int step_meta_reserve(step_t *s, int32_t n_ops);
/* Store op's metadata (reserved); m->coll is not stored (the engine knows it). SIM_OK or SIM_ENOMEM. */
int step_meta_put(step_t *s, sim_op_id_t op, const step_meta_t *m);
/* The metadata of op (stored), with coll from the engine. */
void step_meta_get(const step_t *s, sim_op_id_t op, step_meta_t *m);
/* Group member dims: TP {TP}, CP {CP}, DP {DP} or {CP, DP} (2d-seqp). */
int step_group_dims(const step_t *s, step_group_t g, int dims[STEP_DIM_COUNT]);
int64_t step_group_size(const step_t *s, step_group_t g);
/* GPU of coordinates x. */
int32_t step_gpu(const step_t *s, const int64_t x[STEP_DIM_COUNT]);
/* Fill members[0..size) with the GPUs of the group of kind g that contains the rank x (in rank
 * order: the group's dims in placement order, innermost fastest). Returns the size. */
/* Member r of the expert group g (EP, EDP or ETP) of the expert grid's rank q: its q. */
int64_t step_expert_member(const step_t *s, step_group_t g, int64_t q, int64_t r);

int32_t step_group_members(const step_t *s, step_group_t g, const int64_t x[STEP_DIM_COUNT],
                           int32_t *members);
/* The analytic time of a collective (model_collective_time_s with the group's size and members per
 * domain from the placement). */
double step_analytic_coll_s(const step_t *s, step_group_t g, model_coll_op_t op, double volume_gb);
/* The fixed time of a collective of group g (analytic, or measured on the network). */
int step_fixed_time(step_t *s, step_group_t g, model_coll_op_t op, double size_bytes, int root,
                    double *out_s);
/* The layer of id (see STEP_EDGE_ID), or NULL. */
const model_layer_t *step_layer(const step_t *s, int id);
/* Weights (GB) one GPU of a stage holds: its blocks and its edge layers. */
double step_stage_weights_gb(const step_t *s, int32_t stage);
/* Weights (GB) of one part (a block, the embedding, the output layers). */
double step_part_weights_gb(const step_t *s, step_part_t part);
/* The part's weights as stored, what the data-parallel all-gather moves (FP8 parameters in 1 byte). */
double step_part_gather_gb(const step_t *s, step_part_t part);
/* Pipeline hop time (analytic mode) from stage a to b. */
double step_hop_s(const step_t *s, int32_t stage_a, int32_t stage_b);

/* step_build.c: emit every operation. */
int step_build(step_t *s);
/* An estimate of the operations step_build would emit at this level and granularity. */
int64_t step_estimate_ops(const step_t *s, step_collapsed_t level, step_granularity_t gran);

/* step_collapse.c */
/* Network mode: check that collapsing the tensor ranks is exact; 1 if so, 0 with note filled. */
int step_rails_exact(step_t *s, char *note, size_t note_size);
/* How many routes step_rails_exact compares (every ordered pair of the groups it checks, the shifted
 * rails included): its cost, O(1). */
double step_rails_check_routes(const step_t *s);
/* Network mode: measure the idle-network time of a collective of a collapsed group (every group at
 * once, checking they agree when exact is asked for) and the bytes it puts on each link (into
 * load->n_links, links, bytes; freed with step_free). */
int step_measure(step_t *s, step_group_t g, model_coll_op_t op, double size_bytes, int root, double *out_s,
                 int *agree, step_fixed_key_t *load);

/* Chunk c of stage p runs the first (the last) virtual stage of its path (step_schedule_vstage). */
int step_vs_first(const step_t *s, int32_t p, int32_t c);
int step_vs_last(const step_t *s, int32_t p, int32_t c);
/* The microbatches each model chunk runs: m, or m / 2 for DualPipe (each direction its half). */
int32_t step_chunk_microbatches(const step_t *s);

#endif
