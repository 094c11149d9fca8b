/* step_build.c - every operation of one training step, stage by stage, in schedule order.
 *
 * All simulated GPUs of a stage do the same work, so a stage is built in lockstep: each plan segment
 * becomes one operation per GPU (compute), one collective per group (real collectives), or one
 * fixed-duration operation per GPU (collectives of collapsed groups, and every collective in
 * analytic mode with collapsing). The operations of one GPU's microbatch pass form a chain: each
 * depends on the one before (across streams), so compute and tensor-parallel communication are
 * serial as in the model. Consecutive compute segments merge into one operation until something must
 * attach between them: a real collective, a data-parallel dependency (the all-gather before a
 * block's first forward, the reduce-scatter after its last backward), the end of the pass, or, at
 * layer granularity, a fixed-duration collective (which is then an operation of its own).
 * The first virtual stage runs the embedding before its blocks (its backward after them), the last
 * the output layers after its blocks (backward before them), as plans of their own. Data parallelism
 * follows training.dp_comm: sharded, per block (and edge part) an all-gather before its first forward
 * and a reduce-scatter after its last backward; allreduce-overlap, an all-reduce bucket after each
 * one's last backward; allreduce, one all-reduce of the stage's gradients after its last backward.
 * sharded-overlap (Megatron-Core's distributed optimizer), per model chunk buckets of
 * model_dp_buckets: a bucket's reduce-scatter after the last backward of its parts; its all-gather
 * dispatched when the previous bucket's first forward starts (the chunk's first bucket's at the start
 * of the chunk before it, the first two chunks' at the start), the bucket's first forward waiting for it.
 * fsdp (fully sharded), per unit pass (a part's forward or backward of one microbatch) an all-gather
 * of the part's weights that the pass waits for, issued when the pass before it starts (prefetch
 * depth 1; the stage's first at the start), and after every backward pass the part's reduce-scatter,
 * all on the data-parallel stream in that order (model/fsdp.c).
 * Then, with several stages and the embedding, the tied embedding's gradient all-reduce between
 * the first and the last stage, then the optimizer step.
 * Pipeline messages are added last, once every stage's passes exist: per channel in the sender's
 * order, so both ends see the same order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "step_internal.h"

static const char *const NAME_PASS[3] = {"forward", "backward", "weight gradient"};

static const char *coll_name(step_group_t g, model_coll_op_t op) {
    static const char *const tp[] = {"tp none",      "tp allreduce", "tp allgather", "tp reducescatter",
                                     "tp broadcast", "tp reduce",    "tp p2p",       "tp alltoall"};
    static const char *const cp[] = {"cp none",      "cp allreduce", "cp allgather", "cp reducescatter",
                                     "cp broadcast", "cp reduce",    "cp p2p",       "cp alltoall"};
    static const char *const dp[] = {"dp none",      "dp allreduce", "dp allgather", "dp reducescatter",
                                     "dp broadcast", "dp reduce",    "dp p2p",       "dp alltoall"};
    static const char *const ep[] = {"ep none",      "ep allreduce", "ep allgather", "ep reducescatter",
                                     "ep broadcast", "ep reduce",    "ep p2p",       "ep alltoall"};
    static const char *const edp[] = {"edp none",      "edp allreduce", "edp allgather", "edp reducescatter",
                                      "edp broadcast", "edp reduce",    "edp p2p",       "edp alltoall"};
    static const char *const etp[] = {"etp none",      "etp allreduce", "etp allgather", "etp reducescatter",
                                      "etp broadcast", "etp reduce",    "etp p2p",       "etp alltoall"};
    const unsigned i = (unsigned)op <= MODEL_COLL_ALLTOALL ? (unsigned)op : 0u;
    return g == STEP_GROUP_CP    ? cp[i]
           : g == STEP_GROUP_DP  ? dp[i]
           : g == STEP_GROUP_EP  ? ep[i]
           : g == STEP_GROUP_EDP ? edp[i]
           : g == STEP_GROUP_ETP ? etp[i]
                                 : tp[i];
}

static sim_coll_op_t sim_op_of(model_coll_op_t op) {
    switch (op) {
    case MODEL_COLL_ALLREDUCE:
        return SIM_COLL_ALLREDUCE;
    case MODEL_COLL_ALLGATHER:
        return SIM_COLL_ALLGATHER;
    case MODEL_COLL_REDUCESCATTER:
        return SIM_COLL_REDUCESCATTER;
    case MODEL_COLL_BROADCAST:
        return SIM_COLL_BROADCAST;
    case MODEL_COLL_REDUCE:
        return SIM_COLL_REDUCE;
    case MODEL_COLL_ALLTOALL:
        return SIM_COLL_ALLTOALL;
    default:
        return SIM_COLL_SENDRECV;
    }
}

typedef struct builder {
    step_t *s;
    sim_engine_t *e;
    int32_t n, stage;
    const int32_t *gpus; /* the stage's GPUs */
    /* per stage-local GPU */
    int32_t *tail, *tail_stream, *tail2, *pend, *last_rs;
    /* stage-local groups of the real (not fixed) kinds: groups[g] lists every stage-local index,
     * group after group, each in rank order */
    int32_t *groups[STEP_GROUP_COUNT];
    int32_t group_size[STEP_GROUP_COUNT];
    int32_t *gbuf; /* member GPUs of one collective */
    sim_op_id_t *obuf;
    /* the accumulated compute operation */
    int acc_open, acc_pass, acc_chunk, acc_mb;
    int acc_block0, acc_block1, acc_layer0, acc_layer1;
    double acc_dur, acc_tp, acc_flops, acc_hbm, acc_act;
    /* schedule and per-item records (all stages) */
    int split;                /* 1: the schedule splits the backward into B (pass 1) and W (pass 2) */
    int64_t n_items;          /* per stage: 2 m v, 3 m v split */
    step_sched_item_t *items; /* [pp][n_items] */
    int32_t *pos;             /* [pp][passes][v][m] -> item index */
    int32_t *first, *last;    /* [pp][n_items][n] chain ops of each item */
    int32_t *last2;           /* [pp][n_items][n] a second op the item's end waits for (SUMMA panels), -1 */
    int32_t *opt;             /* [pp][n] the optimizer op, -1 */
    int32_t *fin;             /* [pp][n] the op the stage's gradient work ends with (the embedding
                                 sync waits for it), -1 */
    int64_t cur_item;
    int32_t item_ops; /* compute operations flushed in the current item (the jitter's key) */
    /* sharded-overlap, the current stage's buckets: parts keyed by stage-local block, then the
     * embedding (L) and the output layer (L + 1) */
    int32_t *bk_of;       /* [L + 2] the part's bucket within its chunk (0: the first reduce-scattered) */
    char *bk_head;        /* [L + 2] the part comes first in forward order in its bucket */
    double *bk_gb;        /* [v][L + 2] bucket weights, by chunk and bucket */
    double *bk_ag_gb;     /* [v][L + 2] the same buckets' weights as stored: what their all-gathers move */
    double *bk_param;     /* [L + 2] scratch: parameters of a chunk's parts, backward order */
    int32_t *bk_key;      /* [L + 2] scratch: the parts' keys, same order */
    int *bk_tmp;          /* [L + 2] scratch: their buckets */
    int32_t *bk_n;        /* [v] buckets per chunk */
    sim_op_id_t *ag_wait; /* [v][n] the chunk's dispatched all-gather not yet waited for, -1 */
    /* with experts, the routed experts' own buckets over the expert-data-parallel group, as bk_*; the
     * all-gathers of both sequences share the data-parallel stream: ag_seq counts their dispatches,
     * ag_seq_d and ag_seq_x ([v]) the one each chunk's ag_wait and ag_wait_x hold (-1: none) */
    int32_t *bx_of;
    char *bx_head;
    double *bx_gb, *bx_ag_gb;
    int32_t *bx_n;
    sim_op_id_t *ag_wait_x;
    int64_t ag_seq, *ag_seq_d, *ag_seq_x;
    /* fsdp, the current stage's unit passes (a part's forward or backward of one microbatch) */
    double *fs_gb;        /* [n_items x (chunk blocks + 2)] their weights, in the order they run */
    int64_t fs_n, fs_k;   /* how many; the next one to run */
    sim_op_id_t *fs_wait; /* [n] the all-gather the next unit pass waits for, -1 */
    /* the expert skew: per GPU the accumulated operation's extra expert time (acc_skewed 1: some),
     * and the load factors of every expert-parallel rank for (skew_block, skew_mb) */
    double *acc_skew, *skew_f;
    int acc_skewed;
    int32_t skew_block, skew_mb;
    double skew_fmax;
} builder_t;

/* ---- operations and their metadata -------------------------------------------------------------- */

/* Metadata with every field at its "none" value, on the current stage. */
static step_meta_t meta_none(const builder_t *b) {
    step_meta_t m;
    memset(&m, 0, sizeof m);
    m.coll = -1;
    m.stage = b->stage;
    m.chunk = m.microbatch = m.first_block = -1;
    m.pass = -1;
    m.layer0 = m.layer1 = -1;
    m.coll_op = -1;
    m.group = -1;
    return m;
}

static int reserve(builder_t *b) {
    return step_meta_reserve(b->s, sim_op_count(b->e));
}

static int engine_fail(builder_t *b, int rc) {
    return step_fail(b->s, rc, "%s", sim_engine_last_error(b->e));
}

static int depend(builder_t *b, sim_op_id_t op, sim_op_id_t after) {
    if (op < 0 || after < 0 || op == after)
        return SIM_OK;
    const int rc = sim_op_depend(b->e, op, after);
    return rc ? engine_fail(b, rc) : SIM_OK;
}

/* Append op (on stream) to GPU j's chain: after its tail (when on another stream), the second tail
 * and any pending data-parallel all-gather. */
static int chain_add(builder_t *b, int32_t j, sim_op_id_t op, int32_t stream) {
    int rc = SIM_OK;
    if (b->tail[j] >= 0 && b->tail_stream[j] != stream)
        rc = depend(b, op, b->tail[j]);
    if (!rc)
        rc = depend(b, op, b->tail2[j]);
    if (!rc)
        rc = depend(b, op, b->pend[j]);
    if (rc)
        return rc;
    b->tail[j] = op;
    b->tail_stream[j] = stream;
    b->tail2[j] = b->pend[j] = -1;
    if (b->cur_item >= 0) {
        const int64_t k = ((int64_t)b->stage * b->n_items + b->cur_item) * b->n + j;
        if (b->first[k] < 0)
            b->first[k] = op;
        b->last[k] = op;
        b->last2[k] = -1;
    }
    return SIM_OK;
}

static int32_t global_block(const builder_t *b, int32_t chunk, int32_t local) {
    const step_t *s = b->s;
    const int32_t vs = step_schedule_vstage(s->cfg.schedule, s->pp, s->v, b->stage, chunk);
    return vs * s->chunk_blocks + local % s->chunk_blocks;
}

/* ---- the accumulator ------------------------------------------------------------------------------ */

static void acc_add(builder_t *b, int32_t block, int layer0, int layer1, double dur, double tp, double flops,
                    double hbm, double act) {
    if (!b->acc_open) {
        b->acc_open = 1;
        b->acc_block0 = b->acc_block1 = -1;
        b->acc_layer0 = layer0;
        b->acc_layer1 = layer1;
        b->acc_dur = b->acc_tp = b->acc_flops = b->acc_hbm = b->acc_act = 0.0;
        if (b->acc_skewed)
            for (int32_t j = 0; j < b->n; j++)
                b->acc_skew[j] = 0.0;
        b->acc_skewed = 0;
    }
    if (block >= 0) { /* -1: an edge layer, no block */
        if (b->acc_block0 < 0)
            b->acc_block0 = block;
        b->acc_block1 = block;
    }
    if (layer1 >= 0)
        b->acc_layer1 = layer1;
    b->acc_dur += dur;
    b->acc_tp += tp;
    b->acc_flops += flops;
    b->acc_hbm += hbm;
    b->acc_act += act;
}

static int flush(builder_t *b) {
    if (!b->acc_open)
        return SIM_OK;
    b->acc_open = 0;
    const int32_t lo = b->acc_block0 < b->acc_block1 ? b->acc_block0 : b->acc_block1;
    const int32_t hi = b->acc_block0 < b->acc_block1 ? b->acc_block1 : b->acc_block0;
    /* a W pass keys as pass 3 (2 is the optimizer step's) */
    const uint64_t key =
        step_jitter_key(b->acc_pass == 2 ? 3 : b->acc_pass, b->acc_chunk, b->acc_mb, b->item_ops++);
    for (int32_t j = 0; j < b->n; j++) {
        sim_op_id_t op;
        /* perturbations scale the compute, not the fixed-time communication folded into it */
        const double comp = b->acc_skewed ? b->acc_dur + b->acc_skew[j] : b->acc_dur;
        const double dur =
            b->s->perturbed ? step_perturb_s(b->s, b->gpus[j], key, comp) + b->acc_tp : comp + b->acc_tp;
        int rc = sim_op_compute(b->e, b->gpus[j], STEP_STREAM_COMPUTE, dur, NAME_PASS[b->acc_pass], &op);
        if (rc)
            return engine_fail(b, rc);
        if ((rc = reserve(b)))
            return rc;
        step_meta_t m = meta_none(b);
        m.gpu = b->gpus[j];
        m.kind = STEP_OP_COMPUTE;
        m.pass = (int8_t)(b->acc_pass == 2 ? 3 : b->acc_pass); /* the metadata's 2 is the optimizer */
        m.chunk = b->acc_chunk;
        m.microbatch = b->acc_mb;
        m.first_block = lo >= 0 ? global_block(b, b->acc_chunk, lo) : -1;
        m.n_blocks = (int16_t)(lo >= 0 ? hi - lo + 1 : 0);
        m.layer0 = (int8_t)b->acc_layer0;
        m.layer1 = (int8_t)b->acc_layer1;
        m.flops_tflop = b->acc_flops;
        m.hbm_gb = b->acc_hbm;
        m.tp_comm_s = b->acc_tp;
        m.act_gb = b->acc_pass ? -b->acc_act : b->acc_act;
        if ((rc = step_meta_put(b->s, op, &m)) || (rc = chain_add(b, j, op, STEP_STREAM_COMPUTE)))
            return rc;
    }
    return SIM_OK;
}

/* ---- communication -------------------------------------------------------------------------------- */

static int comm_meta(builder_t *b, sim_op_id_t op, int32_t gpu, step_group_t g, model_coll_op_t cop,
                     double bytes, int fixed, int pass, int32_t chunk, int32_t mb) {
    step_meta_t m = meta_none(b);
    m.gpu = gpu;
    /* the expert all-to-alls count as the layers' collectives (tensor-parallel comm, as the model
     * charges them), the expert gradients' reduction as data parallelism */
    m.kind = g == STEP_GROUP_DP || g == STEP_GROUP_EDP ? STEP_OP_DP : STEP_OP_TP;
    m.group = (int8_t)g;
    m.coll_op = (int8_t)cop;
    m.comm_gb = bytes * 1e-9;
    m.fixed = (int8_t)fixed;
    m.pass = (int8_t)pass;
    m.chunk = chunk;
    m.microbatch = mb;
    return step_meta_put(b->s, op, &m);
}

/* A fixed-duration stand-in on every GPU of the stage; ops[j] receives GPU j's operation. */
static int fixed_ops(builder_t *b, step_group_t g, model_coll_op_t cop, double bytes, double dur_s,
                     int32_t stream, int pass, int32_t chunk, int32_t mb, sim_op_id_t *ops) {
    for (int32_t j = 0; j < b->n; j++) {
        int rc = sim_op_compute(b->e, b->gpus[j], stream, dur_s, coll_name(g, cop), &ops[j]);
        if (rc)
            return engine_fail(b, rc);
        if ((rc = reserve(b)))
            return rc;
        if ((rc = comm_meta(b, ops[j], b->gpus[j], g, cop, bytes, 1, pass, chunk, mb)))
            return rc;
    }
    return SIM_OK;
}

/* One real collective per group of kind g on the stage; ops[j] receives GPU j's member operation. */
static int real_colls(builder_t *b, step_group_t g, model_coll_op_t cop, double bytes, int root,
                      int32_t stream, int pass, int32_t chunk, int32_t mb, sim_op_id_t *ops) {
    const int32_t sz = b->group_size[g];
    for (int32_t k = 0; k < b->n; k += sz) {
        const int32_t *mem = b->groups[g] + k;
        for (int32_t i = 0; i < sz; i++)
            b->gbuf[i] = b->gpus[mem[i]];
        const sim_coll_desc_t d = {.op = sim_op_of(cop),
                                   .algo = SIM_ALGO_AUTO,
                                   .fidelity = SIM_FIDELITY_DEFAULT,
                                   .use_default_mode = 1,
                                   .size_bytes = bytes,
                                   .gpus = b->gbuf,
                                   .n_gpus = sz,
                                   .root = sz > 0 ? root % sz : 0,
                                   .stream = stream,
                                   .name = coll_name(g, cop)};
        int rc = sim_coll_add(b->e, &d, b->obuf, NULL);
        if (rc)
            return engine_fail(b, rc);
        if ((rc = reserve(b)))
            return rc;
        for (int32_t i = 0; i < sz; i++) {
            ops[mem[i]] = b->obuf[i];
            if ((rc = comm_meta(b, b->obuf[i], b->gbuf[i], g, cop, bytes, 0, pass, chunk, mb)))
                return rc;
        }
    }
    return SIM_OK;
}

/* A collective of a layer (or a data-parallel one): fixed or real as its group is. */
static int comm_ops(builder_t *b, step_group_t g, model_coll_op_t cop, double bytes, int root, int32_t stream,
                    int pass, int32_t chunk, int32_t mb, sim_op_id_t *ops) {
    step_t *s = b->s;
    if (s->fixed_group[g]) {
        double t = 0.0;
        const int rc = step_fixed_time(s, g, cop, bytes, root, &t);
        return rc ? rc : fixed_ops(b, g, cop, bytes, t, stream, pass, chunk, mb, ops);
    }
    return real_colls(b, g, cop, bytes, root, stream, pass, chunk, mb, ops);
}

/* A collective of a layer in the chain. Fixed ones fold into the compute operation at microbatch
 * granularity. */
static int chain_coll(builder_t *b, step_group_t g, model_coll_op_t cop, double bytes, int root,
                      int32_t block, const step_sched_item_t *it, double fixed_s, sim_op_id_t *ops) {
    step_t *s = b->s;
    int rc;
    if (s->fixed_group[g] && s->granularity == STEP_GRANULARITY_MICROBATCH) {
        acc_add(b, block, b->acc_open ? b->acc_layer0 : -1, -1, 0.0, fixed_s, 0.0, 0.0, 0.0);
        return SIM_OK;
    }
    if ((rc = flush(b)))
        return rc;
    if (s->fixed_group[g])
        rc = fixed_ops(b, g, cop, bytes, fixed_s, STEP_STREAM_TP, it->pass, it->chunk, it->microbatch, ops);
    else
        rc = real_colls(b, g, cop, bytes, root, STEP_STREAM_TP, it->pass, it->chunk, it->microbatch, ops);
    for (int32_t j = 0; j < b->n && !rc; j++)
        rc = chain_add(b, j, ops[j], STEP_STREAM_TP);
    return rc;
}

/* ---- SUMMA layers ----------------------------------------------------------------------------------- */

/* A SUMMA layer whose groups take fixed times: its exposed communication (precompute) as a fixed
 * segment, then its compute. */
static int summa_fixed(builder_t *b, const step_seg_t *seg, const model_pass_t *ps, int32_t block,
                       const step_sched_item_t *it, double exposed, sim_op_id_t *ops) {
    step_t *s = b->s;
    const double c = seg->dur_s;
    double bytes = 0.0;
    for (int k = 0; k < ps->n_colls && k < MODEL_MAX_COLLS; k++)
        bytes += ps->colls[k].volume_gb * 1e9;
    if (s->granularity == STEP_GRANULARITY_MICROBATCH) {
        acc_add(b, block, seg->layer0, seg->layer1, c, exposed, seg->flops_tflop, seg->hbm_gb, seg->act_gb);
        return SIM_OK;
    }
    int rc = flush(b);
    if (!rc && exposed > 0.0) {
        rc = fixed_ops(b, STEP_GROUP_TP, MODEL_COLL_BROADCAST, bytes, exposed, STEP_STREAM_TP, it->pass,
                       it->chunk, it->microbatch, ops);
        for (int32_t j = 0; j < b->n && !rc; j++) {
            step_meta_t m;
            step_meta_get(b->s, ops[j], &m);
            m.coll_op = -1; /* the panels' exposed time, several collectives */
            rc = step_meta_put(b->s, ops[j], &m);
            if (!rc)
                rc = chain_add(b, j, ops[j], STEP_STREAM_TP);
        }
    }
    if (!rc)
        acc_add(b, block, seg->layer0, seg->layer1, c, 0.0, seg->flops_tflop, seg->hbm_gb, seg->act_gb);
    return rc;
}

/* A compute operation of duration dur on every GPU of the stage, in the chain. */
static int compute_now(builder_t *b, const step_seg_t *seg, double dur, int32_t block,
                       const step_sched_item_t *it, double act, sim_op_id_t *ops) {
    acc_add(b, block, seg->layer0, seg->layer1, dur, 0.0,
            seg->flops_tflop * (dur / (seg->dur_s > 0 ? seg->dur_s : 1)),
            seg->hbm_gb * (dur / (seg->dur_s > 0 ? seg->dur_s : 1)), act);
    b->acc_pass = it->pass;
    const int rc = flush(b);
    for (int32_t j = 0; j < b->n && !rc; j++)
        ops[j] = b->tail[j];
    return rc;
}

/* A SUMMA layer with real collectives: the explicit structure of summa_fixed. */
static int summa_real(builder_t *b, const step_seg_t *seg, const model_pass_t *ps, int32_t block,
                      const step_sched_item_t *it, sim_op_id_t *ops, sim_op_id_t *ops2) {
    step_t *s = b->s;
    const int nb = (int)(s->job.par.nb > 0 ? s->job.par.nb : 1);
    int rc = flush(b);
    if (rc)
        return rc;
    /* one panel's collectives on the TP stream; the first of the layer joins the chain */
    const int reference = s->job.compat == MODEL_COMPAT_REFERENCE;
    for (int i = 0; i < (reference ? 1 + nb : nb) && !rc; i++) {
        const int panel = reference ? (i == 0 ? 0 : i - 1) : i;
        for (int c = 0; c < ps->n_colls && c < MODEL_MAX_COLLS && !rc; c++) {
            const model_coll_t *k = &ps->colls[c];
            const step_group_t g = step_group_of(k->group);
            rc = real_colls(b, g, k->op, k->volume_gb / nb * 1e9, panel, STEP_STREAM_TP, it->pass, it->chunk,
                            it->microbatch, ops);
            for (int32_t j = 0; j < b->n && !rc && i == 0 && c == 0; j++)
                rc = chain_add(b, j, ops[j], STEP_STREAM_TP);
        }
        if (rc)
            break;
        if (reference && i == 0) { /* the GEMM after panel 0, beside every panel */
            for (int32_t j = 0; j < b->n; j++) {
                b->tail[j] = ops[j];
                b->tail_stream[j] = STEP_STREAM_TP;
            }
            rc = compute_now(b, seg, seg->dur_s, block, it, seg->act_gb, ops2);
        } else if (!reference) { /* GEMM slice i after panel i */
            for (int32_t j = 0; j < b->n; j++) {
                if (b->tail_stream[j] != STEP_STREAM_TP)
                    b->tail2[j] = ops[j];
                else
                    b->tail[j] = ops[j];
            }
            rc = compute_now(b, seg, seg->dur_s / nb, block, it, i == nb - 1 ? seg->act_gb : 0.0, ops2);
        }
    }
    if (!rc && reference)
        for (int32_t j = 0; j < b->n; j++)
            b->tail2[j] = ops[j]; /* the last panel: the next operation waits for it too */
    return rc;
}

/* ---- tensor-parallel communication overlap --------------------------------------------------------- */

/* One piece of an overlapped GEMM (1/n of its compute, FLOPs and bytes; the activations with the
 * last piece) as a compute operation in the chain. */
static int overlap_piece(builder_t *b, const step_seg_t *seg, int32_t block, int last) {
    const double n = (double)seg->chunks;
    acc_add(b, block, seg->layer0, seg->layer1, seg->dur_s / n, 0.0, seg->flops_tflop / n, seg->hbm_gb / n,
            last ? seg->act_gb : 0.0);
    return flush(b);
}

/* A GEMM with its tensor-parallel collective in chunks under it (training.tp_comm_overlap; the
 * closed form is model_overlap_exposed_s): the GEMM in n pieces on the compute stream, the collective
 * in pieces on the TP stream, each 1/steps of its bytes (fixed groups: of its whole time). Ring
 * exchange (the all-gather of the GEMM's input): the n - 1 steps back to back from the segment's
 * start (after what the chain waits for there: the operation before, a pending data-parallel
 * all-gather), piece 0 on the local shard at once, piece k after step k. Pipelined (the
 * reduce-scatter of its output): piece k's collective after piece k, in stream order; the next
 * operation of the chain waits for the last one. Bulk (the input-gradient reduce-scatter beside the
 * weight-gradient GEMM): the whole collective after piece 0, beside piece 1; the next waits for it. At
 * microbatch granularity with a fixed group the segment folds into one compute operation of its closed-form
 * time. */
static int overlap_seg(builder_t *b, const step_seg_t *seg, const model_pass_t *ps, int32_t block,
                       const step_sched_item_t *it, double exposed_s, sim_op_id_t *ops) {
    step_t *s = b->s;
    const step_group_t g = step_group_of(ps->colls[seg->coll].group); /* every collective's */
    const int n = seg->chunks, ring = seg->overlap == MODEL_OVERLAP_RING,
              bulk = seg->overlap == MODEL_OVERLAP_BULK;
    const int steps = ring ? n - 1 : bulk ? 1 : n;
    const int nc = ps->n_colls < MODEL_MAX_COLLS ? ps->n_colls : MODEL_MAX_COLLS;
    if (s->fixed_group[g] && s->granularity == STEP_GRANULARITY_MICROBATCH) {
        acc_add(b, block, seg->layer0, seg->layer1, seg->dur_s, exposed_s, seg->flops_tflop, seg->hbm_gb,
                seg->act_gb);
        return SIM_OK;
    }
    double step_s[MODEL_MAX_COLLS] = {0.0};
    int rc = flush(b);
    for (int c = 0; c < nc && !rc && s->fixed_group[g]; c++) {
        const model_coll_t *mc = &ps->colls[c];
        rc = step_fixed_time(s, g, mc->op, mc->volume_gb * 1e9, 0, &step_s[c]);
        step_s[c] /= steps;
    }
    for (int k = 0; k < n && !rc; k++) {
        /* ring: step k + 1 is issued before piece k (it needs only the steps before it); pipelined:
         * piece k, then its chunk */
        if (!ring && (rc = overlap_piece(b, seg, block, k == n - 1)))
            break;
        for (int c = 0; c < nc && !rc && (ring ? k + 1 < n : !bulk || k == 0); c++) {
            const model_coll_t *mc = &ps->colls[c];
            const double bytes = mc->volume_gb * 1e9 / steps;
            rc = s->fixed_group[g] ? fixed_ops(b, g, mc->op, bytes, step_s[c], STEP_STREAM_TP, it->pass,
                                               it->chunk, it->microbatch, ops)
                                   : real_colls(b, g, mc->op, bytes, 0, STEP_STREAM_TP, it->pass, it->chunk,
                                                it->microbatch, ops);
            /* the first of a step or chunk waits for what starts it; the rest follow in stream order */
            for (int32_t j = 0; j < b->n && !rc && c == 0 && (!ring || k == 0); j++) {
                rc = depend(b, ops[j], b->tail[j]);
                if (!rc && ring)
                    rc = depend(b, ops[j], b->pend[j]);
                if (!rc && ring)
                    rc = depend(b, ops[j], b->tail2[j]);
            }
        }
        if (!rc && ring) {
            if ((rc = overlap_piece(b, seg, block, k == n - 1)))
                break;
            for (int32_t j = 0; j < b->n && k + 1 < n; j++)
                b->tail2[j] = ops[j]; /* piece k + 1 waits for step k + 1 */
        }
    }
    for (int32_t j = 0; j < b->n && !rc && !ring; j++)
        b->tail2[j] = ops[j]; /* the last chunk ends the segment */
    return rc;
}

/* ---- data parallelism -------------------------------------------------------------------------------- */

/* The data-parallel groups of a part's weights (weights_gb, of which expert_gb are routed experts'):
 * the dense weights over the data-parallel group, the experts' over the expert-data-parallel group
 * (as model_expert_groups); *gb 0 where a group has one member or nothing to carry. */
static void dp_split(const step_t *s, double weights_gb, double expert_gb, double gb[2]) {
    gb[0] = step_group_size(s, STEP_GROUP_DP) > 1 ? weights_gb - expert_gb : 0.0;
    gb[1] = expert_gb > 0.0 && step_group_size(s, STEP_GROUP_EDP) > 1 ? expert_gb : 0.0;
}

/* The all-gather of a part's weights (weights_gb, expert_gb of them over the expert-data-parallel
 * group) before its first forward (sharded). */
static int dp_allgather(builder_t *b, const step_sched_item_t *it, double weights_gb, double expert_gb,
                        sim_op_id_t *ops) {
    step_t *s = b->s;
    double gb[2];
    dp_split(s, weights_gb, expert_gb, gb);
    int rc = SIM_OK;
    for (int k = 0; k < 2 && !rc; k++) {
        if (gb[k] <= 0.0)
            continue;
        rc = flush(b);
        if (!rc)
            rc = comm_ops(b, k ? STEP_GROUP_EDP : STEP_GROUP_DP, MODEL_COLL_ALLGATHER, gb[k] * 1e9, 0,
                          STEP_STREAM_DP, 0, it->chunk, it->microbatch, ops);
        for (int32_t j = 0; j < b->n && !rc; j++)
            b->pend[j] = ops[j]; /* the second follows the first on the stream */
    }
    return rc;
}

/* A collective cop of gradients (weights_gb) over the data-parallel group after the chain's tail: a
 * part's reduce-scatter after its last backward (sharded), its bucket's all-reduce
 * (allreduce-overlap), or the stage's one all-reduce after the last backward (allreduce). */
static int dp_after(builder_t *b, const step_sched_item_t *it, model_coll_op_t cop, double weights_gb,
                    double expert_gb, sim_op_id_t *ops) {
    step_t *s = b->s;
    double gb[2];
    dp_split(s, weights_gb, expert_gb, gb);
    int rc = SIM_OK;
    for (int k = 0; k < 2 && !rc; k++) {
        if (gb[k] <= 0.0)
            continue;
        rc = flush(b);
        if (!rc)
            rc = comm_ops(b, k ? STEP_GROUP_EDP : STEP_GROUP_DP, cop, gb[k] * 1e9, 0, STEP_STREAM_DP, 1,
                          it ? it->chunk : -1, it ? it->microbatch : -1, ops);
        for (int32_t j = 0; j < b->n && !rc; j++) {
            rc = depend(b, ops[j], b->tail[j]);
            if (!rc)
                rc = depend(b, ops[j], b->tail2[j]);
            b->last_rs[j] = ops[j];
        }
    }
    return rc;
}

/* ---- the distributed optimizer's buckets (sharded-overlap) ----------------------------------------- */

static step_part_t part_of_key(const step_t *s, int32_t key) {
    return key < s->layers_per_stage    ? STEP_PART_BLOCK
           : key == s->layers_per_stage ? STEP_PART_EMBEDDING
                                        : STEP_PART_OUTPUT;
}

/* The routed experts' weights of a part (0 for the edge parts and a dense model); stored 1: as stored
 * (FP8 parameters in one byte). */
static double part_expert_gb(const step_t *s, step_part_t part, int stored) {
    const model_block_t *blk = &s->est.block;
    if (part != STEP_PART_BLOCK)
        return 0.0;
    return blk->expert_weights_gb - (stored ? blk->expert_fp8_param_saving_gb : 0.0);
}

/* The buckets of every model chunk of stage p: its parts in backward order (the output layer on the
 * last virtual stage, the chunk's blocks last first, the embedding on the first), grouped by
 * model_dp_buckets with Megatron-Core's bucket size over the data-parallel group. */
static void bucket_plan(builder_t *b, int32_t p) {
    step_t *s = b->s;
    const int32_t L = s->layers_per_stage, lc = s->chunk_blocks, w = L + 2;
    const double cap = model_dp_bucket_params(step_group_size(s, STEP_GROUP_DP));
    for (int32_t i = 0; i < s->v * w; i++)
        b->bk_gb[i] = b->bk_ag_gb[i] = b->bx_gb[i] = b->bx_ag_gb[i] = 0.0;
    for (int32_t c = 0; c < s->v; c++)
        b->ag_seq_d[c] = b->ag_seq_x[c] = -1;
    for (int32_t c = 0; c < s->v; c++) {
        int n = 0;
        if (s->emb && step_vs_last(s, p, c))
            b->bk_key[n++] = L + 1;
        for (int32_t k = lc - 1; k >= 0; k--)
            b->bk_key[n++] = c * lc + k;
        if (s->emb && step_vs_first(s, p, c))
            b->bk_key[n++] = L;
        for (int i = 0; i < n; i++)
            b->bk_param[i] = (step_part_weights_gb(s, part_of_key(s, b->bk_key[i])) -
                              part_expert_gb(s, part_of_key(s, b->bk_key[i]), 0)) /
                             s->job.system.element_gb;
        b->bk_n[c] = model_dp_buckets(b->bk_param, n, cap, b->bk_tmp);
        for (int i = 0; i < n; i++) {
            const int32_t key = b->bk_key[i];
            const step_part_t part = part_of_key(s, key);
            b->bk_of[key] = b->bk_tmp[i];
            b->bk_head[key] = (char)(i == n - 1 || b->bk_tmp[i + 1] != b->bk_tmp[i]);
            b->bk_gb[c * w + b->bk_tmp[i]] += step_part_weights_gb(s, part) - part_expert_gb(s, part, 0);
            b->bk_ag_gb[c * w + b->bk_tmp[i]] += step_part_gather_gb(s, part) - part_expert_gb(s, part, 1);
        }
        b->bx_n[c] = 0;
        if (!s->moe)
            continue;
        /* the experts' sequence: the same parts and bucket size, their routed experts' weights */
        for (int i = 0; i < n; i++)
            b->bk_param[i] = part_expert_gb(s, part_of_key(s, b->bk_key[i]), 0) / s->job.system.element_gb;
        b->bx_n[c] = model_dp_buckets(b->bk_param, n, cap, b->bk_tmp);
        for (int i = 0; i < n; i++) {
            const int32_t key = b->bk_key[i];
            const step_part_t part = part_of_key(s, key);
            b->bx_of[key] = b->bk_tmp[i];
            b->bx_head[key] = (char)(i == n - 1 || b->bk_tmp[i + 1] != b->bk_tmp[i]);
            b->bx_gb[c * w + b->bk_tmp[i]] += part_expert_gb(s, part, 0);
            b->bx_ag_gb[c * w + b->bk_tmp[i]] += part_expert_gb(s, part, 1);
        }
    }
}

/* Dispatch bucket k of chunk c's all-gather (k < 0: none) after the chain's tail, on the DP stream
 * after the all-gathers dispatched before it; it waits in ag_wait until a forward needs it. experts:
 * the routed experts' bucket sequence over the expert-data-parallel group (bx_*, ag_wait_x,
 * ag_seq_x) instead of the dense one over dp. */
static int ag_dispatch(builder_t *b, const step_sched_item_t *it, int32_t c, int k, int experts,
                       sim_op_id_t *ops) {
    step_t *s = b->s;
    const step_group_t group = experts ? STEP_GROUP_EDP : STEP_GROUP_DP;
    const double *ag_gb = experts ? b->bx_ag_gb : b->bk_ag_gb;
    const double gb = k >= 0 ? ag_gb[c * (s->layers_per_stage + 2) + k] : 0.0;
    sim_op_id_t *wait = (experts ? b->ag_wait_x : b->ag_wait) + (int64_t)c * b->n;
    int64_t *seq = experts ? &b->ag_seq_x[c] : &b->ag_seq_d[c];
    for (int32_t j = 0; j < b->n; j++)
        wait[j] = -1;
    *seq = -1;
    if (step_group_size(s, group) <= 1 || gb <= 0.0)
        return SIM_OK;
    int rc = flush(b);
    if (!rc)
        rc = comm_ops(b, group, MODEL_COLL_ALLGATHER, gb * 1e9, 0, STEP_STREAM_DP, 0, c, it->microbatch, ops);
    for (int32_t j = 0; j < b->n && !rc; j++) {
        rc = depend(b, ops[j], b->tail[j]);
        wait[j] = ops[j];
    }
    *seq = b->ag_seq++;
    return rc;
}

/* The start of chunk c's first forward: the first two chunks' first all-gathers at the start, a later
 * chunk's when the chunk before it starts (Megatron-Core's schedules call param_sync_func one chunk
 * ahead). */
static int chunk_start(builder_t *b, const step_sched_item_t *it, sim_op_id_t *ops) {
    const int32_t c = it->chunk, v = b->s->v;
    int rc = SIM_OK;
    if (c == 0)
        rc = ag_dispatch(b, it, 0, b->bk_n[0] - 1, 0, ops);
    if (!rc && c == 0 && b->s->moe) /* the experts' first bucket (one chunk: model_job_check) */
        rc = ag_dispatch(b, it, 0, b->bx_n[0] - 1, 1, ops);
    if (!rc && c == 0 && v > 1)
        rc = ag_dispatch(b, it, 1, b->bk_n[1] - 1, 0, ops);
    if (!rc && c >= 1 && c + 1 < v)
        rc = ag_dispatch(b, it, c + 1, b->bk_n[c + 1] - 1, 0, ops);
    return rc;
}

/* A bucket's first forward: wait for its all-gather, then dispatch the next bucket's. */
static int bucket_forward(builder_t *b, const step_sched_item_t *it, int32_t key, sim_op_id_t *ops) {
    int rc = flush(b);
    const int32_t c = it->chunk;
    const int hd = b->bk_head[key], hx = b->s->moe && b->bx_head[key];
    /* with experts, a part first in both sequences' buckets waits for the later of the two all-gathers:
     * on the one data-parallel stream it ends last */
    const int use_x = hx && (!hd || b->ag_seq_x[c] > b->ag_seq_d[c]);
    const sim_op_id_t *wait = (use_x ? b->ag_wait_x : b->ag_wait) + (int64_t)c * b->n;
    for (int32_t j = 0; j < b->n && !rc; j++)
        b->pend[j] = wait[j];
    if (!rc && hd)
        rc = ag_dispatch(b, it, c, b->bk_of[key] - 1, 0, ops);
    if (!rc && hx)
        rc = ag_dispatch(b, it, c, b->bx_of[key] - 1, 1, ops);
    return rc;
}

/* ---- fully sharded data parallelism (fsdp) ------------------------------------------------------------ */

/* The all-gather of unit pass k's weights on the data-parallel stream after the chain's tail (the end of
 * the pass before the one now starting); fs_wait receives it. Nothing for a part without weights or
 * without a data-parallel group: its pass then waits for no gather. */
static int fsdp_gather(builder_t *b, const step_sched_item_t *it, int64_t k, sim_op_id_t *ops) {
    step_t *s = b->s;
    for (int32_t j = 0; j < b->n; j++)
        b->fs_wait[j] = -1;
    const double gb = k < b->fs_n ? b->fs_gb[k] : 0.0;
    if (step_group_size(s, STEP_GROUP_DP) <= 1 || gb <= 0.0)
        return SIM_OK;
    int rc = comm_ops(b, STEP_GROUP_DP, MODEL_COLL_ALLGATHER, gb * 1e9, 0, STEP_STREAM_DP, 0, it->chunk,
                      it->microbatch, ops);
    for (int32_t j = 0; j < b->n && !rc; j++) {
        rc = depend(b, ops[j], b->tail[j]);
        if (!rc)
            rc = depend(b, ops[j], b->tail2[j]);
        b->fs_wait[j] = ops[j];
    }
    return rc;
}

/* The stage's unit passes in the order build_stage runs them; the first one's all-gather at the start. */
static int fsdp_plan(builder_t *b, int32_t p, const step_sched_item_t *items, sim_op_id_t *ops) {
    step_t *s = b->s;
    const int32_t lc = s->chunk_blocks;
    b->fs_n = b->fs_k = 0;
    for (int64_t i = 0; i < b->n_items; i++) {
        const step_sched_item_t *it = &items[i];
        const int vs_first = s->emb && p == 0 && it->chunk == 0;
        const int vs_last = s->emb && p == s->pp - 1 && it->chunk == s->v - 1;
        if (it->pass == 2)
            continue;
        if (it->pass ? vs_last : vs_first)
            b->fs_gb[b->fs_n++] = step_part_weights_gb(s, it->pass ? STEP_PART_OUTPUT : STEP_PART_EMBEDDING);
        for (int32_t k = 0; k < lc; k++)
            b->fs_gb[b->fs_n++] = step_part_weights_gb(s, STEP_PART_BLOCK);
        if (it->pass ? vs_first : vs_last)
            b->fs_gb[b->fs_n++] = step_part_weights_gb(s, it->pass ? STEP_PART_EMBEDDING : STEP_PART_OUTPUT);
    }
    return b->n_items > 0 ? fsdp_gather(b, &items[0], 0, ops) : SIM_OK;
}

/* A unit pass: wait for its all-gather, issue the next one's, run it, and after a backward
 * reduce-scatter the part's gradients. */
static int fsdp_pass(builder_t *b, const step_sched_item_t *it, step_part_t part, int32_t block,
                     sim_op_id_t *ops, sim_op_id_t *ops2);

/* ---- one stage -------------------------------------------------------------------------------------- */

/* The weight-gradient part of a backward compute segment (model_layer_wgrad_s of its layers). */
static void seg_wgrad(const step_t *s, const step_seg_t *seg, double *w_s, double *w_tflop) {
    const int lo = seg->layer0 < seg->layer1 ? seg->layer0 : seg->layer1;
    const int hi = seg->layer0 < seg->layer1 ? seg->layer1 : seg->layer0;
    *w_s = *w_tflop = 0.0;
    for (int l = lo; l <= hi; l++) {
        const model_layer_t *ly = step_layer(s, l);
        *w_s += model_layer_wgrad_s(ly);
        *w_tflop += model_layer_wgrad_tflop(ly);
    }
    if (*w_s > seg->dur_s) /* a segment's time is its layers' backward times: never less than W */
        *w_s = seg->dur_s;
}

/* ---- the expert skew -------------------------------------------------------------------------------- */

/* The routed experts' time in a compute segment of a block's pass (the experts-* layers' compute and
 * exposed memory time, scaled to the routed tokens k of k + s): mode 0 all of it, 1 its B part (less
 * the weight gradients), 2 its W part. */
static double expert_routed_s(const step_t *s, const step_seg_t *seg, int pass, int mode) {
    const int lo = seg->layer0 < seg->layer1 ? seg->layer0 : seg->layer1;
    const int hi = seg->layer0 < seg->layer1 ? seg->layer1 : seg->layer0;
    const double k = (double)s->job.model.moe.topk, sh = (double)s->job.model.moe.shared_experts;
    double t = 0.0;
    for (int l = lo; l <= hi && l < STEP_EDGE_ID; l++) {
        const model_layer_t *ly = step_layer(s, l);
        if (!ly || strncmp(ly->name, "experts-", 8) != 0)
            continue;
        const model_pass_t *ps = pass ? &ly->bwd : &ly->fwd;
        const double full = ps->comp_s + ps->mem_exposed_s, w = pass ? model_layer_wgrad_s(ly) : 0.0;
        t += mode == 0 ? full : mode == 1 ? full - w : w;
    }
    return t * k / (k + sh);
}

/* The load factors of block (stage-local) in microbatch mb, cached; returns the largest. */
static double skew_factors(builder_t *b, int32_t chunk, int32_t block, int32_t mb) {
    const step_t *s = b->s;
    const int32_t gb = global_block(b, chunk, block);
    if (gb != b->skew_block || mb != b->skew_mb) {
        b->skew_fmax = step_expert_shares(s->job.model.moe.experts, s->ep, s->expert_skew, s->expert_seed, gb,
                                          mb, NULL, b->skew_f);
        b->skew_block = gb;
        b->skew_mb = mb;
    }
    return b->skew_fmax;
}

/* With an expert skew: each GPU's extra expert time in the accumulated operation (after acc_add):
 * (f - 1) times the segment's routed expert time, f its expert-parallel rank's load factor. Every GPU
 * is simulated (step.c), stage-local GPU j being q = tp rank + tp x dp rank of the expert grid. */
static void skew_add(builder_t *b, const step_seg_t *seg, int32_t block, const step_sched_item_t *it,
                     int mode) {
    const step_t *s = b->s;
    if (s->expert_skew <= 0.0 || s->ep <= 1 || block < 0)
        return;
    const double t = expert_routed_s(s, seg, it->pass ? 1 : 0, mode);
    if (t <= 0.0)
        return;
    skew_factors(b, it->chunk, block, it->microbatch);
    for (int32_t j = 0; j < b->n; j++)
        b->acc_skew[j] += (b->skew_f[j % s->ep] - 1.0) * t;
    b->acc_skewed = 1;
}

/* The W pass of a part (split schedules): the weight gradients of its backward's compute segments,
 * one compute operation with the rest of the item; it frees the part's activations. */
static void part_wgrad(builder_t *b, const step_sched_item_t *it, step_part_t part, int32_t block) {
    const step_t *s = b->s;
    const step_plan_t *plan = &s->plans[part][1];
    b->acc_pass = it->pass;
    b->acc_chunk = it->chunk;
    b->acc_mb = it->microbatch;
    for (int k = 0; k < plan->n; k++) {
        const step_seg_t *seg = &plan->seg[k];
        if (seg->kind != STEP_SEG_COMPUTE)
            continue;
        double w_s, w_tflop;
        seg_wgrad(s, seg, &w_s, &w_tflop);
        acc_add(b, block, seg->layer0, seg->layer1, w_s, 0.0, w_tflop, 0.0, seg->act_gb);
        skew_add(b, seg, block, it, 2);
    }
}

/* One pass of a part: a block (block >= 0, stage-local) or an edge part (block -1). */
static int part_pass(builder_t *b, const step_sched_item_t *it, step_part_t part, int32_t block,
                     sim_op_id_t *ops, sim_op_id_t *ops2) {
    step_t *s = b->s;
    const step_plan_t *plan = &s->plans[part][it->pass];
    const double *fixed_s = s->seg_fixed_s[part][it->pass];
    int rc = SIM_OK;
    for (int k = 0; k < plan->n && !rc; k++) {
        const step_seg_t *seg = &plan->seg[k];
        const model_layer_t *ly = step_layer(s, seg->layer0);
        const model_pass_t *ps = it->pass ? &ly->bwd : &ly->fwd;
        b->acc_pass = it->pass;
        b->acc_chunk = it->chunk;
        b->acc_mb = it->microbatch;
        switch (seg->kind) {
        case STEP_SEG_COMPUTE:
            if (b->split && it->pass == 1) { /* B: the backward less its W; activations go with the W */
                double w_s, w_tflop;
                seg_wgrad(s, seg, &w_s, &w_tflop);
                acc_add(b, block, seg->layer0, seg->layer1, seg->dur_s - w_s, 0.0, seg->flops_tflop - w_tflop,
                        seg->hbm_gb, 0.0);
                skew_add(b, seg, block, it, 1);
            } else {
                acc_add(b, block, seg->layer0, seg->layer1, seg->dur_s, 0.0, seg->flops_tflop, seg->hbm_gb,
                        seg->act_gb);
                skew_add(b, seg, block, it, 0);
            }
            break;
        case STEP_SEG_COLL: {
            const model_coll_t *c = &ps->colls[seg->coll];
            const step_group_t g = step_group_of(c->group);
            double bytes = c->volume_gb * 1e9;
            /* with an expert skew every member sends what the busiest receives from each (the
             * engine's all-to-all moves equal shares): the group's pace, its bytes an upper bound */
            if (g == STEP_GROUP_EP && s->expert_skew > 0.0 && block >= 0)
                bytes *= skew_factors(b, it->chunk, block, it->microbatch);
            rc = chain_coll(b, g, c->op, bytes, 0, block, it, fixed_s[k], ops);
            break;
        }
        case STEP_SEG_OVERLAP:
            rc = overlap_seg(b, seg, ps, block, it, fixed_s[k], ops);
            break;
        case STEP_SEG_SUMMA: {
            const int fixed = s->fixed_group[STEP_GROUP_TP] && s->fixed_group[STEP_GROUP_CP];
            rc = fixed ? summa_fixed(b, seg, ps, block, it, fixed_s[k], ops)
                       : summa_real(b, seg, ps, block, it, ops, ops2);
            break;
        }
        }
    }
    return rc;
}

static int fsdp_pass(builder_t *b, const step_sched_item_t *it, step_part_t part, int32_t block,
                     sim_op_id_t *ops, sim_op_id_t *ops2) {
    int rc = flush(b);
    for (int32_t j = 0; j < b->n; j++)
        b->pend[j] = b->fs_wait[j];
    if (!rc)
        rc = fsdp_gather(b, it, ++b->fs_k, ops);
    if (!rc)
        rc = part_pass(b, it, part, block, ops, ops2);
    if (!rc && it->pass == 1)
        rc = dp_after(b, it, MODEL_COLL_REDUCESCATTER, step_part_weights_gb(b->s, part), 0.0,
                      ops); /* fsdp has no experts (model_job_check) */
    return rc;
}

/* The data-parallel work of a part around its passes: sharded, an all-gather of its weights before
 * its first forward and a reduce-scatter after its last backward; allreduce-overlap, an all-reduce
 * bucket of its gradients after its last backward; allreduce, nothing here (one all-reduce of the
 * whole stage after the last backward). seen and done count the part's passes. */
static int part_with_dp(builder_t *b, const step_sched_item_t *it, step_part_t part, int32_t block,
                        char *seen, int32_t *done, sim_op_id_t *ops, sim_op_id_t *ops2) {
    step_t *s = b->s;
    const double w_gb = step_part_weights_gb(s, part);
    const double exp_gb = part == STEP_PART_BLOCK ? s->est.block.expert_weights_gb : 0.0;
    /* the gradients are complete after the last backward, or the last W when the schedule splits */
    const int last_grad = it->pass == (b->split ? 2 : 1) && ++*done == step_chunk_microbatches(s);
    int rc = SIM_OK;
    if (s->dp_comm == MODEL_DP_FSDP)
        return fsdp_pass(b, it, part, block, ops, ops2);
    if (s->dp_comm == MODEL_DP_SHARDED_OVERLAP) {
        const int32_t L = s->layers_per_stage;
        const int32_t key = part == STEP_PART_BLOCK ? block : part == STEP_PART_EMBEDDING ? L : L + 1;
        const int head = b->bk_head[key], head_x = s->moe && b->bx_head[key];
        if (!it->pass && !*seen) {
            *seen = 1;
            if (head || head_x)
                rc = bucket_forward(b, it, key, ops);
        }
        if (!rc && it->pass == 2)
            part_wgrad(b, it, part, block);
        else if (!rc)
            rc = part_pass(b, it, part, block, ops, ops2);
        if (!rc && last_grad && head)
            rc = dp_after(b, it, MODEL_COLL_REDUCESCATTER, b->bk_gb[it->chunk * (L + 2) + b->bk_of[key]], 0.0,
                          ops);
        if (!rc && last_grad && head_x) { /* all of it over the expert-data-parallel group */
            const double x_gb = b->bx_gb[it->chunk * (L + 2) + b->bx_of[key]];
            rc = dp_after(b, it, MODEL_COLL_REDUCESCATTER, x_gb, x_gb, ops);
        }
        return rc;
    }
    if (!it->pass && !*seen) {
        *seen = 1;
        if (s->dp_comm == MODEL_DP_SHARDED)
            rc =
                dp_allgather(b, it, step_part_gather_gb(s, part),
                             part == STEP_PART_BLOCK ? exp_gb - s->est.block.expert_fp8_param_saving_gb : 0.0,
                             ops); /* as stored: FP8 parameters in one byte, the experts' too */
    }
    if (!rc && it->pass == 2)
        part_wgrad(b, it, part, block);
    else if (!rc)
        rc = part_pass(b, it, part, block, ops, ops2);
    if (!rc && last_grad && s->dp_comm != MODEL_DP_ALLREDUCE)
        rc = dp_after(b, it, s->dp_comm == MODEL_DP_SHARDED ? MODEL_COLL_REDUCESCATTER : MODEL_COLL_ALLREDUCE,
                      w_gb, exp_gb, ops);
    return rc;
}

/* Megatron's scatter/gather of pipeline messages without sequence parallelism (the model's p2p time):
 * each tensor rank receives 1/tp of the replicated block output and the tensor group all-gathers it
 * before the pass begins. */
static int p2p_gather(builder_t *b, const step_sched_item_t *it, sim_op_id_t *ops) {
    step_t *s = b->s;
    const double bytes = s->est.block.output_gb * 1e9;
    double t = 0.0;
    int rc = SIM_OK;
    if (s->fixed_group[STEP_GROUP_TP])
        rc = step_fixed_time(s, STEP_GROUP_TP, MODEL_COLL_ALLGATHER, bytes, 0, &t);
    return rc ? rc : chain_coll(b, STEP_GROUP_TP, MODEL_COLL_ALLGATHER, bytes, 0, -1, it, t, ops);
}

static int hop(const step_t *s, int32_t p, int32_t c, int dir, int32_t *q, int32_t *c2);

static int build_stage(builder_t *b, int32_t p, sim_op_id_t *ops, sim_op_id_t *ops2) {
    step_t *s = b->s;
    const int32_t L = s->layers_per_stage, lc = s->chunk_blocks;
    char *seen = alloc_calloc((size_t)L, 1);
    int32_t *bwd_count = alloc_calloc((size_t)L, sizeof *bwd_count);
    char seen_edge[STEP_PARTS] = {0, 0, 0};
    int32_t done_edge[STEP_PARTS] = {0, 0, 0};
    int rc = seen && bwd_count ? SIM_OK : step_fail(s, SIM_ENOMEM, "step: out of memory");
    b->stage = p;
    b->gpus = s->stage_gpus + (int64_t)p * b->n;
    for (int32_t j = 0; j < b->n; j++) {
        b->tail[j] = b->tail2[j] = b->pend[j] = b->last_rs[j] = -1;
        b->tail_stream[j] = STEP_STREAM_COMPUTE;
    }
    b->acc_open = 0;
    const int bucketed = s->dp_comm == MODEL_DP_SHARDED_OVERLAP;
    if (bucketed)
        bucket_plan(b, p);
    const int gather = s->job.compat == MODEL_COMPAT_CORRECTED &&
                       s->job.training.sequence_parallel == MODEL_SEQPAR_OFF &&
                       step_group_size(s, STEP_GROUP_TP) > 1;
    const step_sched_item_t *items = b->items + (int64_t)p * b->n_items;
    if (!rc && s->dp_comm == MODEL_DP_FSDP)
        rc = fsdp_plan(b, p, items, ops);
    for (int64_t i = 0; i < b->n_items && !rc; i++) {
        const step_sched_item_t *it = &items[i];
        /* the first and the last virtual stage run the edge layers */
        const int vs_first = s->emb && step_vs_first(s, p, it->chunk);
        const int vs_last = s->emb && step_vs_last(s, p, it->chunk);
        int32_t q_from = -1, c_from;
        /* W: nothing arrives; nor does what the same GPU sent itself (ZB-V's turn of the V) */
        const int receives =
            it->pass != 2 && hop(s, p, it->chunk, it->pass ? 1 : -1, &q_from, &c_from) && q_from != p;
        b->cur_item = i;
        b->item_ops = 0;
        b->acc_pass = it->pass;
        b->acc_chunk = it->chunk;
        b->acc_mb = it->microbatch;
        if (bucketed && !it->pass && s->cfg.schedule == STEP_SCHEDULE_DUALPIPE && i == 0) {
            /* DualPipe: a GPU of the second half starts on chunk 1 (its microbatches are not 0..):
             * both chunks' first all-gathers at its first forward, whichever chunk that is */
            step_sched_item_t first = *it;
            first.chunk = 0;
            rc = chunk_start(b, &first, ops);
        } else if (bucketed && !it->pass && it->microbatch == 0 &&
                   s->cfg.schedule != STEP_SCHEDULE_DUALPIPE) {
            rc = chunk_start(b, it, ops);
        }
        if (!rc && gather && receives)
            rc = p2p_gather(b, it, ops);
        const step_part_t before = it->pass ? STEP_PART_OUTPUT : STEP_PART_EMBEDDING;
        if (!rc && (it->pass ? vs_last : vs_first))
            rc = part_with_dp(b, it, before, -1, &seen_edge[before], &done_edge[before], ops, ops2);
        for (int32_t k = 0; k < lc && !rc; k++) {
            const int32_t block = it->chunk * lc + (it->pass ? lc - 1 - k : k);
            rc = part_with_dp(b, it, STEP_PART_BLOCK, block, &seen[block], &bwd_count[block], ops, ops2);
        }
        const step_part_t after = it->pass ? STEP_PART_EMBEDDING : STEP_PART_OUTPUT;
        if (!rc && (it->pass ? vs_first : vs_last))
            rc = part_with_dp(b, it, after, -1, &seen_edge[after], &done_edge[after], ops, ops2);
        if (!rc)
            rc = flush(b);
        for (int32_t j = 0; j < b->n && !rc; j++) /* trailing SUMMA panels end the item too */
            b->last2[((int64_t)p * b->n_items + i) * b->n + j] = b->tail2[j];
    }
    b->cur_item = -1;
    /* allreduce: the stage's gradients, all at once after its last backward */
    if (!rc && s->dp_comm == MODEL_DP_ALLREDUCE)
        rc = dp_after(b, NULL, MODEL_COLL_ALLREDUCE, step_stage_weights_gb(s, p),
                      s->est.block.expert_weights_gb * (double)s->layers_per_stage, ops);
    for (int32_t j = 0; j < b->n && !rc; j++)
        b->fin[(int64_t)p * b->n + j] = b->last_rs[j] >= 0 ? b->last_rs[j] : b->tail[j];
    /* the optimizer step: the model's time on the stage with the most weights, scaled to this one's */
    double w_max = 0.0;
    for (int32_t q = 0; q < s->pp; q++)
        w_max = fmax(w_max, step_stage_weights_gb(s, q));
    /* DualPipe: a GPU holds two stages' weights; the model's time counts them when the job says
     * dualpipe (optimizer_s estimates with the corrected model), else it is one stage's */
    const double copies =
        s->cfg.schedule == STEP_SCHEDULE_DUALPIPE && s->job.training.pipeline != MODEL_PIPELINE_DUALPIPE
            ? 2.0
            : 1.0;
    const double opt_s = w_max > 0.0 ? copies * s->optimizer_s * (step_stage_weights_gb(s, p) / w_max) : 0.0;
    if (!rc && opt_s > 0.0) {
        for (int32_t j = 0; j < b->n && !rc; j++) {
            sim_op_id_t op;
            rc = sim_op_compute(b->e, b->gpus[j], STEP_STREAM_COMPUTE,
                                step_perturb_s(s, b->gpus[j], step_jitter_key(2, -1, -1, 0), opt_s),
                                "optimizer", &op);
            if (rc) {
                rc = engine_fail(b, rc);
                break;
            }
            if ((rc = reserve(b)))
                break;
            step_meta_t m = meta_none(b);
            m.gpu = b->gpus[j];
            m.kind = STEP_OP_OPTIMIZER;
            m.pass = 2;
            rc = step_meta_put(b->s, op, &m);
            if (!rc)
                rc = chain_add(b, j, op, STEP_STREAM_COMPUTE);
            if (!rc)
                rc = depend(b, op, b->last_rs[j]);
            b->opt[(int64_t)p * b->n + j] = op;
        }
    }
    free(seen);
    free(bwd_count);
    return rc;
}

/* The tied word embedding (pp > 1): after its gradient work, every GPU of the first stage all-reduces
 * the embedding's gradient with its counterpart on the last stage (Megatron's embedding group), before
 * either runs its optimizer step. */
static int pair_sync(builder_t *b, const int32_t ends[2], double emb_gb, const char *name);

static int embedding_sync(builder_t *b) {
    step_t *s = b->s;
    if (s->cfg.schedule == STEP_SCHEDULE_DUALPIPE) { /* every GPU with its mirror, both stages' gradients */
        for (int32_t p = 0; p < s->pp / 2; p++) {
            const int32_t ends[2] = {p, s->pp - 1 - p};
            const int rc = pair_sync(b, ends, step_stage_weights_gb(s, p), "mirror sync");
            if (rc)
                return rc;
        }
        return SIM_OK;
    }
    /* untied: nothing shared; ZB-V: the embedding and the output layer on the same GPU */
    if (!s->emb || s->pp < 2 || s->job.model.untied_embeddings || s->cfg.schedule == STEP_SCHEDULE_ZB_V)
        return SIM_OK;
    double emb_gb = 0.0;
    const model_block_t *blk = &s->est.block;
    for (int i = 0; i < blk->n_edges; i++)
        if (blk->edges[i].module == MODEL_MODULE_OUTPUT && blk->edges[i].tensor_core)
            emb_gb = blk->edges[i].weights_gb;
    if (emb_gb <= 0.0)
        return SIM_OK;
    const int32_t ends[2] = {0, s->pp - 1};
    return pair_sync(b, ends, emb_gb, "embedding sync");
}

/* An all-reduce of emb_gb between every GPU of stage ends[0] and its counterpart on stage ends[1],
 * after both finish their gradients and before either's optimizer step. */
static int pair_sync(builder_t *b, const int32_t ends[2], double emb_gb, const char *name) {
    step_t *s = b->s;
    for (int32_t j = 0; j < b->n; j++) {
        int32_t gpus[2];
        sim_op_id_t mem[2];
        for (int e = 0; e < 2; e++)
            gpus[e] = s->stage_gpus[(int64_t)ends[e] * b->n + j];
        const sim_coll_desc_t d = {.op = SIM_COLL_ALLREDUCE,
                                   .algo = SIM_ALGO_AUTO,
                                   .fidelity = SIM_FIDELITY_DEFAULT,
                                   .use_default_mode = 1,
                                   .size_bytes = emb_gb * 1e9,
                                   .gpus = gpus,
                                   .n_gpus = 2,
                                   .stream = STEP_STREAM_DP,
                                   .name = name};
        int rc = sim_coll_add(b->e, &d, mem, NULL);
        if (rc)
            return engine_fail(b, rc);
        if ((rc = reserve(b)))
            return rc;
        for (int e = 0; e < 2 && !rc; e++) {
            const int64_t k = (int64_t)ends[e] * b->n + j;
            b->stage = ends[e];
            rc = comm_meta(b, mem[e], gpus[e], STEP_GROUP_DP, MODEL_COLL_ALLREDUCE, emb_gb * 1e9, 0, 1, -1,
                           -1);
            if (!rc)
                rc = depend(b, mem[e], b->fin[k]);
            if (!rc)
                rc = depend(b, b->opt[k], mem[e]);
        }
        if (rc)
            return rc;
    }
    return SIM_OK;
}

/* ---- pipeline messages ----------------------------------------------------------------------------- */

static int hop(const step_t *s, int32_t p, int32_t c, int dir, int32_t *q, int32_t *c2) {
    const step_schedule_t sch = s->cfg.schedule;
    if (sch == STEP_SCHEDULE_ZB_V || sch == STEP_SCHEDULE_DUALPIPE) {
        const int32_t vs = step_schedule_vstage(sch, s->pp, s->v, p, c) + dir;
        if (vs < 0 || vs >= step_schedule_vstages(sch, s->pp, s->v))
            return 0;
        step_schedule_owner(sch, s->pp, s->v, vs, c, q, c2);
        return 1;
    }
    if (dir > 0) {
        if (p < s->pp - 1) {
            *q = p + 1;
            *c2 = c;
            return 1;
        }
        if (c < s->v - 1) {
            *q = 0;
            *c2 = c + 1;
            return 1;
        }
        return 0;
    }
    if (p > 0) {
        *q = p - 1;
        *c2 = c;
        return 1;
    }
    if (c > 0) {
        *q = s->pp - 1;
        *c2 = c - 1;
        return 1;
    }
    return 0;
}

static int32_t item_pos(const builder_t *b, int32_t p, int pass, int32_t c, int32_t mb) {
    const step_t *s = b->s;
    return b->pos[(((int64_t)p * (b->split ? 3 : 2) + pass) * s->v + c) * s->m + mb];
}

static int messages(builder_t *b) {
    step_t *s = b->s;
    const double bytes = s->est.summary.p2p_volume_gb * 1e9;
    static const char *const NAMES[2][2] = {{"send activation", "recv activation"},
                                            {"send gradient", "recv gradient"}};
    const int v_shape = s->cfg.schedule == STEP_SCHEDULE_ZB_V || s->cfg.schedule == STEP_SCHEDULE_DUALPIPE;
    for (int32_t p = 0; p < s->pp; p++) {
        b->stage = p;
        const step_sched_item_t *items = &b->items[(int64_t)p * b->n_items];
        int32_t lag = 0; /* DualPipe: sends are made in the order they are posted (send_post) */
        for (int64_t i = 0; i < b->n_items; i++)
            lag = items[i].send_post - 1 > lag ? items[i].send_post - 1 : lag;
        for (int64_t k = 0; k < b->n_items; k++)
            for (int32_t d = lag; d >= 0; d--) {
                const int64_t i = k - d;
                if (i < 0 || (items[i].send_post ? i + items[i].send_post - 1 : i) != k)
                    continue;
                const step_sched_item_t *it = &items[i];
                int32_t q, c2;
                if (it->pass == 2) /* W sends nothing */
                    continue;
                if (!hop(s, p, it->chunk, it->pass ? -1 : 1, &q, &c2))
                    continue;
                const int32_t i2 = item_pos(b, q, it->pass, c2, it->microbatch);
                const step_sched_item_t *it2 = &b->items[(int64_t)q * b->n_items + i2];
                if (q == p) { /* ZB-V's turn of the V: the same GPU, nothing to send */
                    for (int32_t j = 0; j < b->n; j++) {
                        const int64_t kp = ((int64_t)p * b->n_items + i) * b->n + j;
                        const sim_op_id_t consumer = b->first[((int64_t)p * b->n_items + i2) * b->n + j];
                        int rc = depend(b, consumer, b->last[kp]);
                        if (!rc)
                            rc = depend(b, consumer, b->last2[kp]);
                        if (rc)
                            return rc;
                    }
                    continue;
                }
                /* the V and DualPipe send both ways: a stream per neighbour and direction */
                const int down = v_shape ? q < p : it->pass;
                const int32_t ss = down ? STEP_STREAM_SEND_PREV : STEP_STREAM_SEND_NEXT;
                const int32_t rs = down ? STEP_STREAM_RECV_NEXT : STEP_STREAM_RECV_PREV;
                /* DualPipe: sent after item k, waited for by the next; the receive posted after item
                 * r_post of q, waited for by the one after it */
                const int64_t r_post = it2->recv_post ? i2 - it2->recv_post : -2;
                const double hop_s = s->cfg.comm == SIM_COMM_ANALYTIC ? step_hop_s(s, p, q) : 0.0;
                for (int32_t j = 0; j < b->n; j++) {
                    const int32_t src = s->stage_gpus[(int64_t)p * b->n + j],
                                  dst = s->stage_gpus[(int64_t)q * b->n + j];
                    const int64_t kp = ((int64_t)p * b->n_items + k) * b->n + j;
                    const int32_t producer = b->last[kp], producer2 = b->last2[kp];
                    const int32_t consumer = b->first[((int64_t)q * b->n_items + i2) * b->n + j];
                    int32_t after = -1, posted = -1, waiter = -1;
                    if (k + 1 < b->n_items)
                        after = b->first[((int64_t)p * b->n_items + k + 1) * b->n + j];
                    else
                        after = b->opt[(int64_t)p * b->n + j];
                    if (r_post >= 0) /* the receive is posted when item r_post of q ends */
                        posted = b->last[((int64_t)q * b->n_items + r_post) * b->n + j];
                    if (r_post >= -1 && r_post + 1 < i2)
                        waiter = b->first[((int64_t)q * b->n_items + r_post + 1) * b->n + j];
                    sim_op_id_t snd, rcv;
                    int rc;
                    /* Analytic mode: a real message (so traces draw its arrow) whenever the engine's own
                     * analytic time for it rounds to the hop time wanted here; else two fixed-time ends
                     * that start together (the receive is posted early either way). */
                    int fixed_pair = 0;
                    if (s->cfg.comm == SIM_COMM_ANALYTIC) {
                        const int same = src / s->gpus_per_domain == dst / s->gpus_per_domain;
                        const double engine_s = model_collective_time_s(
                            &s->job.system, s->job.compat, MODEL_COLL_P2P, bytes * 1e-9, 2, same ? 2 : 1);
                        fixed_pair = sim_s_to_ps(engine_s) != sim_s_to_ps(hop_s);
                    }
                    if (fixed_pair) {
                        rc = sim_op_compute(b->e, src, ss, hop_s, NAMES[it->pass][0], &snd);
                        if (!rc)
                            rc = sim_op_compute(b->e, dst, rs, hop_s, NAMES[it->pass][1], &rcv);
                    } else {
                        rc = sim_p2p_add(b->e, src, ss, dst, rs, bytes, NAMES[it->pass][0], &snd, &rcv);
                    }
                    if (rc)
                        return engine_fail(b, rc);
                    if ((rc = reserve(b)))
                        return rc;
                    for (int e = 0; e < 2 && !rc; e++) {
                        const sim_op_id_t op = e ? rcv : snd;
                        step_meta_t m = meta_none(b);
                        m.stage = e ? q : p;
                        m.gpu = e ? dst : src;
                        m.kind = STEP_OP_PP;
                        m.group = STEP_META_GROUP_PP;
                        m.coll_op = MODEL_COLL_P2P;
                        m.comm_gb = bytes * 1e-9;
                        m.fixed = (int8_t)fixed_pair;
                        m.pass = (int8_t)it->pass;
                        m.chunk = e ? c2 : it->chunk;
                        m.microbatch = it->microbatch;
                        rc = step_meta_put(b->s, op, &m);
                    }
                    if (rc)
                        return rc;
                    rc = depend(b, snd, producer);
                    if (!rc)
                        rc = depend(b, snd, producer2);
                    if (!rc && fixed_pair)
                        rc = depend(b, rcv, producer);
                    if (!rc && fixed_pair)
                        rc = depend(b, rcv, producer2);
                    if (!rc)
                        rc = depend(b, consumer, rcv);
                    if (!rc && !s->cfg.p2p_async)
                        rc = depend(b, after, snd);
                    /* DualPipe: the exchange waits for its receive's posting, which the GPU's next
                     * compute waits for */
                    if (!rc)
                        rc = depend(b, rcv, posted);
                    if (!rc && fixed_pair)
                        rc = depend(b, snd, posted);
                    if (!rc)
                        rc = depend(b, waiter, rcv);
                    if (rc)
                        return rc;
                }
            }
    }
    return SIM_OK;
}

/* ---- setup -------------------------------------------------------------------------------------------- */

/* Stage-local index of the free coordinates of x (TP, CP, DP, innermost first). */
static int32_t local_index(const step_t *s, const int64_t x[STEP_DIM_COUNT]) {
    static const step_dim_t order[3] = {STEP_DIM_TP, STEP_DIM_CP, STEP_DIM_DP};
    int64_t j = 0, stride = 1;
    for (int i = 0; i < 3; i++) {
        const step_dim_t d = order[i];
        if (s->collapsed_dim[d])
            continue;
        j += x[d] * stride;
        stride *= s->n[d];
    }
    return (int32_t)j;
}

/* groups[g]: every stage-local index once, group after group, members in rank order. */
static int stage_groups(builder_t *b) {
    step_t *s = b->s;
    for (int g = 0; g < STEP_GROUP_COUNT; g++) {
        b->groups[g] = NULL;
        b->group_size[g] = 0;
        if (s->fixed_group[g])
            continue;
        if (g == STEP_GROUP_EP || g == STEP_GROUP_EDP || g == STEP_GROUP_ETP) {
            if (!s->moe)
                continue;
            /* every GPU simulated (step.c): stage-local j is the expert grid's q */
            if (s->level != STEP_FULL || (int64_t)s->ep * s->edp * s->etp != b->n)
                return step_fail(s, SIM_EINVAL, "step: expert groups need every GPU of a stage simulated");
            b->group_size[g] = (int32_t)step_group_size(s, (step_group_t)g);
            b->groups[g] = alloc_malloc((size_t)b->n * sizeof *b->groups[g]);
            if (!b->groups[g])
                return step_fail(s, SIM_ENOMEM, "step: out of memory");
            /* group after group, each listed from its first member (the lowest q) */
            int32_t used = 0;
            for (int32_t j = 0; j < b->n; j++)
                if (step_expert_member(s, (step_group_t)g, j, 0) == j)
                    for (int32_t r = 0; r < b->group_size[g]; r++)
                        b->groups[g][used++] = (int32_t)step_expert_member(s, (step_group_t)g, j, r);
            continue;
        }
        int dims[STEP_DIM_COUNT];
        const int nd = step_group_dims(s, (step_group_t)g, dims);
        const int32_t sz = (int32_t)step_group_size(s, (step_group_t)g);
        b->group_size[g] = sz;
        b->groups[g] = alloc_malloc((size_t)b->n * sizeof *b->groups[g]);
        if (!b->groups[g])
            return step_fail(s, SIM_ENOMEM, "step: out of memory");
        int32_t used = 0;
        for (int32_t j = 0; j < b->n; j++) {
            /* the leader of j's group: coordinates of j with the group's dims at 0 */
            int64_t x[STEP_DIM_COUNT] = {0, 0, 0, 0}, rem = j;
            static const step_dim_t order[3] = {STEP_DIM_TP, STEP_DIM_CP, STEP_DIM_DP};
            for (int i = 0; i < 3; i++)
                if (!s->collapsed_dim[order[i]]) {
                    x[order[i]] = rem % s->n[order[i]];
                    rem /= s->n[order[i]];
                }
            int leader = 1;
            for (int k = 0; k < nd; k++)
                leader &= x[dims[k]] == 0;
            if (!leader)
                continue;
            for (int32_t r = 0; r < sz; r++) { /* mixed radix over the group's dims, first fastest */
                int32_t q = r;
                for (int k = 0; k < nd; k++) {
                    x[dims[k]] = q % s->n[dims[k]];
                    q /= (int32_t)s->n[dims[k]];
                }
                b->groups[g][used++] = local_index(s, x);
            }
        }
        if (used != b->n)
            return step_fail(s, SIM_EINVAL, "step: group %d covers %d of %d GPUs of a stage", g, used, b->n);
    }
    return SIM_OK;
}

static void builder_free(builder_t *b) {
    free(b->tail);
    free(b->tail_stream);
    free(b->tail2);
    free(b->pend);
    free(b->last_rs);
    for (int g = 0; g < STEP_GROUP_COUNT; g++)
        free(b->groups[g]);
    free(b->gbuf);
    free(b->obuf);
    free(b->items);
    free(b->pos);
    free(b->first);
    free(b->last);
    free(b->last2);
    free(b->opt);
    free(b->fin);
    free(b->bk_of);
    free(b->bk_head);
    free(b->bk_gb);
    free(b->bk_ag_gb);
    free(b->bk_param);
    free(b->bk_key);
    free(b->bk_tmp);
    free(b->bk_n);
    free(b->ag_wait);
    free(b->bx_of);
    free(b->bx_head);
    free(b->bx_gb);
    free(b->bx_ag_gb);
    free(b->bx_n);
    free(b->ag_wait_x);
    free(b->ag_seq_d);
    free(b->ag_seq_x);
    free(b->fs_gb);
    free(b->fs_wait);
    free(b->acc_skew);
    free(b->skew_f);
}

/* The fixed times of every plan segment: a COLL segment's collective, a SUMMA layer's exposed
 * communication. Reference: panel 0 exposed, then the GEMM beside all nb panels (the model's rule,
 * docs/model-formulas.md, section 5.3). Corrected: the panels pipelined with nb GEMM slices. */
static int precompute(step_t *s) {
    const double nb = (double)(s->job.par.nb > 0 ? s->job.par.nb : 1);
    for (int part = 0; part < STEP_PARTS; part++)
        for (int pass = 0; pass < 2; pass++) {
            const step_plan_t *plan = &s->plans[part][pass];
            double *fixed_s = s->seg_fixed_s[part][pass];
            for (int k = 0; k < plan->n; k++) {
                const step_seg_t *seg = &plan->seg[k];
                const model_layer_t *ly = step_layer(s, seg->layer0);
                const model_pass_t *ps = pass ? &ly->bwd : &ly->fwd;
                fixed_s[k] = 0.0;
                int rc = SIM_OK;
                if (seg->kind == STEP_SEG_COLL) {
                    const model_coll_t *c = &ps->colls[seg->coll];
                    const step_group_t g = step_group_of(c->group);
                    if (s->fixed_group[g])
                        rc = step_fixed_time(s, g, c->op, c->volume_gb * 1e9, 0, &fixed_s[k]);
                } else if (seg->kind == STEP_SEG_OVERLAP) { /* the exposed part, for microbatch granularity */
                    double t = 0.0;
                    for (int c = 0; c < ps->n_colls && c < MODEL_MAX_COLLS && !rc; c++) {
                        const model_coll_t *mc = &ps->colls[c];
                        const step_group_t g = step_group_of(mc->group);
                        double tc = 0.0;
                        if (s->fixed_group[g])
                            rc = step_fixed_time(s, g, mc->op, mc->volume_gb * 1e9, 0, &tc);
                        t += tc;
                    }
                    fixed_s[k] = model_overlap_exposed_s(seg->overlap, seg->chunks, t, seg->dur_s);
                } else if (seg->kind == STEP_SEG_SUMMA && s->fixed_group[STEP_GROUP_TP] &&
                           s->fixed_group[STEP_GROUP_CP]) {
                    double p0 = 0.0, sum = 0.0, comm_end = 0.0, g_end = 0.0;
                    for (int i = 0; i < (int)nb && !rc; i++) {
                        double p = 0.0;
                        for (int c = 0; c < ps->n_colls && c < MODEL_MAX_COLLS && !rc; c++) {
                            const model_coll_t *mc = &ps->colls[c];
                            double tc = 0.0;
                            rc =
                                step_fixed_time(s, step_group_of(mc->group), mc->op, mc->volume_gb / nb * 1e9,
                                                i % (int)(mc->group_size > 0 ? mc->group_size : 1), &tc);
                            p += tc;
                        }
                        p0 = i == 0 ? p : p0;
                        sum += p;
                        comm_end += p;
                        g_end = fmax(g_end, comm_end) + seg->dur_s / nb;
                    }
                    const double total =
                        s->job.compat == MODEL_COMPAT_REFERENCE ? p0 + fmax(seg->dur_s, sum) : g_end;
                    fixed_s[k] = fmax(total - seg->dur_s, 0.0);
                }
                if (rc)
                    return rc;
            }
        }
    return SIM_OK;
}

int step_build(step_t *s) {
    builder_t b;
    memset(&b, 0, sizeof b);
    b.s = s;
    b.e = s->e;
    b.n = s->per_stage;
    b.cur_item = -1;
    b.split = step_schedule_splits(s->cfg.schedule);
    b.n_items = step_schedule_items(s->cfg.schedule, s->v, s->m);
    const size_t n = (size_t)b.n, nit = (size_t)b.n_items, pp = (size_t)s->pp;
    int64_t max_group = 1;
    for (int g = 0; g < STEP_GROUP_COUNT; g++)
        if (step_group_size(s, (step_group_t)g) > max_group)
            max_group = step_group_size(s, (step_group_t)g);
    b.tail = alloc_malloc(n * sizeof *b.tail);
    b.tail_stream = alloc_malloc(n * sizeof *b.tail_stream);
    b.tail2 = alloc_malloc(n * sizeof *b.tail2);
    b.pend = alloc_malloc(n * sizeof *b.pend);
    b.last_rs = alloc_malloc(n * sizeof *b.last_rs);
    b.gbuf = alloc_malloc((size_t)max_group * sizeof *b.gbuf);
    b.obuf = alloc_malloc((size_t)max_group * sizeof *b.obuf);
    b.items = alloc_malloc(pp * nit * sizeof *b.items);
    b.pos = alloc_malloc(pp * (b.split ? 3 : 2) * (size_t)s->v * (size_t)s->m * sizeof *b.pos);
    b.first = alloc_malloc(pp * nit * n * sizeof *b.first);
    b.last = alloc_malloc(pp * nit * n * sizeof *b.last);
    b.last2 = alloc_malloc(pp * nit * n * sizeof *b.last2);
    b.opt = alloc_malloc(pp * n * sizeof *b.opt);
    b.fin = alloc_malloc(pp * n * sizeof *b.fin);
    const size_t w = (size_t)s->layers_per_stage + 2, v = (size_t)s->v;
    b.bk_of = alloc_malloc(w * sizeof *b.bk_of);
    b.bk_head = alloc_calloc(w, 1);
    b.bk_gb = alloc_malloc(v * w * sizeof *b.bk_gb);
    b.bk_ag_gb = alloc_malloc(v * w * sizeof *b.bk_ag_gb);
    b.bk_param = alloc_malloc(w * sizeof *b.bk_param);
    b.bk_key = alloc_malloc(w * sizeof *b.bk_key);
    b.bk_tmp = alloc_malloc(w * sizeof *b.bk_tmp);
    b.bk_n = alloc_malloc(v * sizeof *b.bk_n);
    b.ag_wait = alloc_malloc(v * n * sizeof *b.ag_wait);
    b.bx_of = alloc_malloc(w * sizeof *b.bx_of);
    b.bx_head = alloc_calloc(w, 1);
    b.bx_gb = alloc_malloc(v * w * sizeof *b.bx_gb);
    b.bx_ag_gb = alloc_malloc(v * w * sizeof *b.bx_ag_gb);
    b.bx_n = alloc_malloc(v * sizeof *b.bx_n);
    b.ag_wait_x = alloc_malloc(v * n * sizeof *b.ag_wait_x);
    b.ag_seq_d = alloc_malloc(v * sizeof *b.ag_seq_d);
    b.ag_seq_x = alloc_malloc(v * sizeof *b.ag_seq_x);
    b.acc_skew = alloc_calloc(n, sizeof *b.acc_skew);
    b.skew_f = alloc_calloc((size_t)s->ep, sizeof *b.skew_f);
    b.skew_block = b.skew_mb = -1;
    sim_op_id_t *ops = alloc_malloc(n * sizeof *ops), *ops2 = alloc_malloc(n * sizeof *ops2);
    int rc = SIM_OK;
    if (s->dp_comm == MODEL_DP_FSDP) {
        b.fs_gb = alloc_malloc(nit * ((size_t)s->chunk_blocks + 2) * sizeof *b.fs_gb);
        b.fs_wait = alloc_malloc(n * sizeof *b.fs_wait);
        if (!b.fs_gb || !b.fs_wait)
            rc = step_fail(s, SIM_ENOMEM, "step: out of memory for the fully sharded units");
    }
    if (!rc && (!b.bk_of || !b.bk_head || !b.bk_gb || !b.bk_ag_gb || !b.bk_param || !b.bk_key || !b.bk_tmp ||
                !b.bk_n || !b.ag_wait || !b.acc_skew || !b.skew_f || !b.bx_of || !b.bx_head || !b.bx_gb ||
                !b.bx_ag_gb || !b.bx_n || !b.ag_wait_x || !b.ag_seq_d || !b.ag_seq_x))
        rc = step_fail(s, SIM_ENOMEM, "step: out of memory for the data-parallel buckets");
    if (!rc && (!b.tail || !b.tail_stream || !b.tail2 || !b.pend || !b.last_rs || !b.gbuf || !b.obuf ||
                !b.items || !b.pos || !b.first || !b.last || !b.last2 || !b.opt || !b.fin || !ops || !ops2))
        rc = step_fail(s, SIM_ENOMEM,
                       "step: out of memory for the schedule of %lld passes x %d GPUs per stage",
                       (long long)(pp * nit), b.n);
    /* Room for the estimated operations at once (untouched room costs no memory; more still fits). */
    if (!rc && s->est_ops > 0 && sim_engine_reserve(s->e, s->op0 + s->est_ops, s->op0 + s->est_ops) != SIM_OK)
        rc = engine_fail(&b, SIM_ENOMEM);
    if (!rc && s->est_ops > 0 && s->op0 + s->est_ops <= INT32_MAX)
        rc = step_meta_reserve(s, (int32_t)(s->op0 + s->est_ops));
    if (!rc)
        rc = precompute(s);
    if (!rc)
        rc = stage_groups(&b);
    for (int32_t p = 0; p < s->pp && !rc; p++) {
        step_sched_item_t *it = b.items + (int64_t)p * b.n_items;
        if (step_schedule_order(s->cfg.schedule, s->pp, s->v, s->m, p, it) != SIM_OK)
            rc = step_fail(s, SIM_EINVAL, "schedule: %s with pp %d, v %d, %d microbatches is not defined",
                           step_schedule_name(s->cfg.schedule), s->pp, s->v, s->m);
        for (int64_t i = 0; i < b.n_items && !rc; i++)
            b.pos[(((int64_t)p * (b.split ? 3 : 2) + it[i].pass) * s->v + it[i].chunk) * s->m +
                  it[i].microbatch] = (int32_t)i;
    }
    if (!rc) {
        memset(b.first, 0xff, pp * nit * n * sizeof *b.first);
        memset(b.last, 0xff, pp * nit * n * sizeof *b.last);
        memset(b.last2, 0xff, pp * nit * n * sizeof *b.last2);
        memset(b.opt, 0xff, pp * n * sizeof *b.opt);
        memset(b.fin, 0xff, pp * n * sizeof *b.fin);
    }
    for (int32_t p = 0; p < s->pp && !rc; p++)
        rc = build_stage(&b, p, ops, ops2);
    if (!rc)
        rc = embedding_sync(&b);
    if (!rc)
        rc = messages(&b);
    free(ops);
    free(ops2);
    builder_free(&b);
    return rc;
}

/* ---- the operation estimate ----------------------------------------------------------------------- */

/* Operations one GPU emits for one block pass. */
static double block_ops(const step_t *s, step_part_t part, int pass, const int fixed[STEP_GROUP_COUNT],
                        step_granularity_t gran) {
    const step_plan_t *plan = &s->plans[part][pass];
    const double nb = (double)(s->job.par.nb > 0 ? s->job.par.nb : 1);
    double ops = 0.0;
    for (int k = 0; k < plan->n; k++) {
        const step_seg_t *seg = &plan->seg[k];
        const model_layer_t *ly = step_layer(s, seg->layer0);
        const model_pass_t *ps = pass ? &ly->bwd : &ly->fwd;
        if (seg->kind == STEP_SEG_COMPUTE) {
            ops += 1.0;
        } else if (seg->kind == STEP_SEG_COLL) {
            const int f = fixed[step_group_of(ps->colls[seg->coll].group)];
            ops += f && gran == STEP_GRANULARITY_MICROBATCH ? 0.0 : 1.0;
        } else if (seg->kind == STEP_SEG_OVERLAP) {
            const int f = fixed[step_group_of(ps->colls[seg->coll].group)];
            ops += f && gran == STEP_GRANULARITY_MICROBATCH ? 0.0 : (1.0 + ps->n_colls) * seg->chunks;
        } else {
            const int f = fixed[STEP_GROUP_TP] && fixed[STEP_GROUP_CP];
            ops += f ? 2.0 : (nb + 1.0) * ps->n_colls + nb;
        }
    }
    return ops;
}

int64_t step_estimate_ops(const step_t *s, step_collapsed_t level, step_granularity_t gran) {
    int fixed[STEP_GROUP_COUNT] = {0, 0, 0};
    double gpus = (double)s->gpus;
    if (level == STEP_STAGES) {
        fixed[0] = fixed[1] = fixed[2] = fixed[STEP_GROUP_EP] = fixed[STEP_GROUP_EDP] =
            fixed[STEP_GROUP_ETP] = 1;
        gpus = (double)s->pp;
    } else if (level == STEP_RAILS) {
        fixed[STEP_GROUP_TP] = 1;
        fixed[STEP_GROUP_CP] = s->job.par.strategy == MODEL_STRATEGY_2D;
        gpus /= (double)s->n[STEP_DIM_TP] * (fixed[STEP_GROUP_CP] ? (double)s->n[STEP_DIM_CP] : 1.0);
    }
    const int all_fixed = fixed[0] && fixed[1] && (fixed[2] || s->job.par.strategy != MODEL_STRATEGY_2D_SEQP);
    const double passes = (double)s->m * (double)s->layers_per_stage; /* block passes per direction */
    double per_gpu;
    if (gran == STEP_GRANULARITY_MICROBATCH && all_fixed)
        per_gpu = 2.0 * s->m * s->v + 4.0 * s->layers_per_stage;
    else
        per_gpu = passes * (block_ops(s, STEP_PART_BLOCK, 0, fixed, gran) +
                            block_ops(s, STEP_PART_BLOCK, 1, fixed, gran));
    /* the edge layers (on the end stages; counted as if on every one), the p2p all-gathers without
     * sequence parallelism */
    for (int part = STEP_PART_EMBEDDING; part < STEP_PARTS; part++)
        per_gpu += (double)s->m * (block_ops(s, (step_part_t)part, 0, fixed, gran) +
                                   block_ops(s, (step_part_t)part, 1, fixed, gran));
    if (s->job.compat == MODEL_COMPAT_CORRECTED && s->job.training.sequence_parallel == MODEL_SEQPAR_OFF)
        per_gpu += 2.0 * s->m * s->v;
    /* messages, data parallel, optimizer; the edges' data parallel and the embedding sync */
    per_gpu += 4.0 * s->m * s->v + 2.0 * s->layers_per_stage + 1.0 + (s->emb ? 6.0 : 0.0);
    if (step_schedule_splits(s->cfg.schedule)) /* the W passes: about two operations per chunk */
        per_gpu += 2.0 * s->m * s->v;
    if (s->dp_comm == MODEL_DP_FSDP) /* fsdp: per unit pass a gather, a reduce-scatter, a compute */
        per_gpu += 3.0 * 2.0 * s->m * ((double)s->layers_per_stage + 2.0);
    const double total = per_gpu * gpus;
    return total > 9e18 ? INT64_MAX : (int64_t)total;
}
