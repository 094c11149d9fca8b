/* model.h - the analytic performance model of arXiv 2410.00273 (Subramanian et al.,
 * "Comprehensive Performance Modeling and System Design Insights for Foundation Models").
 *
 * Contract
 * - Owns: plain descriptions of a transformer (model_transformer_t) and of a GPU system
 *   (model_system_t) with their presets; the per-layer cost table of one transformer block
 *   (FLOPs, HBM bytes, collectives, activation and weight memory, roofline and collective times);
 *   the two-tier collective formula; the corrected model's GEMM time by tiles and waves; the
 *   closed-form iteration estimate; the layout search; the FLOP efficiency fitted to measured runs.
 * - Knows nothing of the engine, graphs, JSON or the command line. Nothing here prints or exits.
 * - Units follow the reference implementation and are carried by every name:
 *   FLOPs in TFLOP (1e12), bytes in decimal GB (1e9), rates in TFLOP/s and GB/s, time in seconds
 *   (double). Integer degrees and dimensions are int64_t; every local dimension is a floor
 *   division, as in the reference (docs/model-formulas.md, section 1).
 * - compat: MODEL_COMPAT_REFERENCE reproduces the published model to floating-point
 *   rounding, quirks included (docs/model-formulas.md, section 12); it ignores job->training entirely.
 *   MODEL_COMPAT_CORRECTED (the default) fixes quirks 1-3 of that section (docs/model.md), uses the
 *   collective model of docs/collectives.md, checked against measured NCCL runs, streams HBM at
 *   90% of its bandwidth (the reference: 100%), times every GEMM by its shape on a system with
 *   sm_count > 0 (tiles and waves over the SMs at the efficiency of the GEMM's precision,
 *   model_gemm_time_s; docs/model.md, "GEMM time"), and models what job->training asks for
 *   (recomputation, sequence parallelism off, materialised attention, the embedding and output
 *   layer, the optimizer step, the interleaved schedule, Megatron's data-parallel all-reduce,
 *   unfused gradient accumulation; docs/validation.md; FP8 GEMMs, docs/model.md "Precision";
 *   Megatron-Core's tensor-parallel communication overlap and context-parallel ring, its distributed
 *   optimizer's buckets and its overlapped pipeline transfers, docs/model-formulas.md, section 16).
 *   A zeroed
 * model_training_t asks for none of them: the block table and the iteration formula are then exactly the ones
 * without options.
 * - Memory: every struct is caller-allocated; no function allocates except model_search_run,
 *   which allocates the result array that model_search_result_destroy frees, and
 *   model_calibrate_fit, whose per-run arrays model_calibrate_destroy frees.
 * - Errors: fallible functions return MODEL_OK (0) or a negative model_status_t and never abort
 *   on bad input. model_job_check explains the first invalid field of a job.
 * - No globals, no I/O; all functions are reentrant.
 */
#ifndef STEPSIM_MODEL_H
#define STEPSIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

typedef enum model_status {
    MODEL_OK = 0,
    MODEL_EINVAL = -1, /* the job violates a rule of model_job_check */
    MODEL_ENOMEM = -2  /* allocation failed (search and calibration only) */
} model_status_t;

typedef enum model_compat { MODEL_COMPAT_CORRECTED = 0, MODEL_COMPAT_REFERENCE = 1 } model_compat_t;

typedef enum model_strategy {
    MODEL_STRATEGY_1D = 0,     /* Megatron TP + sequence parallelism, degree tp */
    MODEL_STRATEGY_2D = 1,     /* 2D SUMMA GEMMs (m2 = tp2 rows, m1 = tp1 cols), panels nb */
    MODEL_STRATEGY_2D_SEQP = 2 /* 1D weights on tp1, context (sequence) parallel on tp2 */
} model_strategy_t;
#define MODEL_STRATEGY_COUNT 3

/* GPU system. Field names map onto the reference's system keys (docs/model-formulas.md, section 2). */
typedef struct model_system {
    char name[32];
    double matrix_tflop_per_s;      /* peak dense fp16/bf16 tensor-core rate per GPU */
    double vector_tflop_per_s;      /* peak fp16 non-tensor rate per GPU */
    double vector_fp32_tflop_per_s; /* informational; unused by the model (as in the reference) */
    double hbm_gb_per_s;            /* HBM bandwidth */
    double hbm_capacity_gb;         /* HBM size per GPU */
    double nvlink_gb_per_s;         /* per-GPU NVLink bandwidth, one direction */
    double nvlink_eff;              /* efficiency on NVLink, 0 < eff <= 1 */
    double nvlink_latency_s;        /* per-hop NVLink latency */
    double ib_gb_per_s;             /* per-NIC injection bandwidth of the scale-out network */
    double ib_eff;                  /* efficiency on the scale-out network */
    double ib_latency_s;            /* per-hop scale-out latency */
    int64_t nvlink_size;            /* GPUs per NVLink domain ("NVS") */
    int64_t nic_factor;             /* NICs per GPU */
    double element_gb;              /* bytes of one activation/weight element, in GB (2e-9) */
    double mask_element_gb;         /* bytes of one dropout-mask element, in GB (1e-9) */
    double flop_efficiency;         /* fraction of peak reached by kernels (0.8) */
    double kernel_overhead_s;       /* fixed per-kernel launch cost (20e-6) */
    double fp8_matrix_tflop_per_s;  /* peak dense FP8 tensor-core rate per GPU; 0: no FP8 (A100) */
    /* Corrected model only (docs/model.md, "Kernel efficiencies"); 0 means flop_efficiency: */
    double fp8_flop_efficiency;  /* fraction of the FP8 peak FP8 GEMMs reach */
    double attention_efficiency; /* fraction of the BF16 peak the fused (flash) attention kernel reaches,
                                    counted on the FLOPs it executes (a causal mask skips half) */
    int64_t sm_count; /* corrected model: streaming multiprocessors per GPU; > 0 switches the GEMM time by
                         shape on (model_gemm_time_s: tiles and waves over them, the GEMM's efficiency
                         being the fraction of an SM's peak one tile sustains); 0: the flat rule
                         F / (efficiency x peak), as the reference (which ignores it) */
} model_system_t;

/* The feed-forward activation (docs/model.md, "Architectures"). */
typedef enum model_ffn_act {
    MODEL_FFN_GELU = 0,   /* GPT: fc1 (e x f), GeLU, fc2 (f x e) (default) */
    MODEL_FFN_SWIGLU = 1, /* Llama: gate and up (two e x f, one fused GEMM as Megatron-Core's
                             linear_fc1 of width 2f), silu(gate) x up, down (f x e) */
    MODEL_FFN_RELU2 = 2   /* Nemotron: fc1, squared ReLU, fc2 (not gated) */
} model_ffn_act_t;

/* The normalisation of the two norms of each block and the final norm. */
typedef enum model_norm {
    MODEL_NORM_LAYERNORM = 0, /* mean and variance, gain and bias (default) */
    MODEL_NORM_RMSNORM = 1    /* root mean square only, gain only */
} model_norm_t;

/* Position information. */
typedef enum model_position {
    MODEL_POSITION_LEARNED = 0, /* a learned l x e table added to the embedding (default) */
    MODEL_POSITION_ROTARY = 1   /* rotary embeddings: Q and K rotated in every block, no table */
} model_position_t;

/* The attention mask: which keys each query sees. */
typedef enum model_mask {
    MODEL_MASK_CAUSAL = 0, /* decoder language models: key j <= query i (default) */
    MODEL_MASK_NONE = 1    /* encoders and vision transformers: every key */
} model_mask_t;

/* Transformer (docs/model-formulas.md, section 3). The blocks are always modeled; the embedding and the
 * output layer only in the corrected model with job->training.embedding set (they need vocab > 0).
 * The architecture fields after vocab are zero for a GPT-style model (multi-head attention, GeLU,
 * LayerNorm, learned positions, tied embedding and output weights), which is the only architecture
 * of the reference: MODEL_COMPAT_REFERENCE refuses any other (model_job_check). */
/* Mixture of experts (docs/model-formulas.md, "Mixture of experts"). Blocks first_dense.. of the
 * model replace their feed-forward network by a router (an e x experts GEMM) and experts of
 * hidden size expert_ffn_hidden (each the model's ffn_act), of which every token visits topk, plus
 * shared_experts that every token visits. All zero: a dense model. */
typedef struct model_moe {
    int64_t experts;           /* routed experts E per MoE block (0: dense model) */
    int64_t topk;              /* experts per token k, 1..E */
    int64_t shared_experts;    /* experts every token visits (DeepSeek), >= 0 */
    int64_t expert_ffn_hidden; /* f_e of every expert; 0: the model's ffn_hidden */
    int64_t first_dense;       /* leading blocks that stay dense (DeepSeek's first_k_dense_replace), in model
                                  order on the first stages (model_estimate; docs/model-formulas.md,
                                  section 18.3): plain 1F1B only; the simulated step refuses them */
    double capacity_factor;    /* 0: dropless (every routed token computed); > 0: an expert computes at
                                  most capacity_factor x its fair share T k / E of tokens */
} model_moe_t;

typedef struct model_transformer {
    char name[32];
    int64_t seq_len;    /* l */
    int64_t hidden;     /* e */
    int64_t heads;      /* h */
    int64_t layers;     /* D, transformer blocks */
    int64_t ffn_hidden; /* f, 4e unless given */
    int64_t vocab;      /* V: embedding and output layer (training.embedding); 0 if unknown */
    int64_t kv_heads;   /* grouped-query attention: K and V heads (dividing h); 0 means h */
    model_ffn_act_t ffn_act;
    model_norm_t norm;
    model_position_t position;
    int untied_embeddings;       /* 1: the output layer has its own V x e matrix; 0: tied (default) */
    model_mask_t attention_mask; /* corrected model, flash attention: a causal mask skips the score
                                    blocks above the diagonal (the reference counts the full square) */
    model_moe_t moe;             /* mixture of experts; all zero: a dense model */
} model_transformer_t;

/* The K/V head count in effect: kv_heads, or heads when kv_heads is 0. */
int64_t model_kv_heads(const model_transformer_t *m);
/* Whether m is the GPT-style architecture (every architecture field at its default; kv_heads 0
 * or equal to heads). */
int model_arch_is_default(const model_transformer_t *m);
/* The parameter count of the whole model (not of one GPU): D blocks (Q, K, V and output
 * projections, the feed-forward matrices, the two norms' gains and biases) plus the V x e word
 * embedding, the l x e position table (learned positions), the final norm and, untied, the V x e
 * output matrix. Linear-layer biases are not counted (Llama and Nemotron have none); the
 * vocabulary is not padded. Closed form in docs/model-formulas.md, section 15. */
double model_param_count(const model_transformer_t *m);

/* 1 if m is a mixture of experts (moe.experts > 0). */
int model_is_moe(const model_transformer_t *m);
/* Blocks with experts: layers - first_dense (0 for a dense model). */
int64_t model_moe_layers(const model_transformer_t *m);

const char *model_ffn_act_name(model_ffn_act_t a); /* "gelu", "swiglu", "relu2" */
int model_ffn_act_parse(const char *name, model_ffn_act_t *out);
const char *model_norm_name(model_norm_t n); /* "layernorm", "rmsnorm" */
int model_norm_parse(const char *name, model_norm_t *out);
const char *model_position_name(model_position_t p); /* "learned", "rotary" */
int model_position_parse(const char *name, model_position_t *out);
const char *model_mask_name(model_mask_t m); /* "causal", "none" */
int model_mask_parse(const char *name, model_mask_t *out);

/* A parallel layout. For 1d, tp1 == tp, tp2 == 1, nv_tp1 is the TP group's count per domain
 * and nv_tp2 == 1. nb is used by 2d only (set it to 1 otherwise). nv_* say how many members of
 * each group share one NVLink domain (docs/model-formulas.md, section 9). */
typedef struct model_parallel {
    model_strategy_t strategy;
    int64_t dp, tp, tp1, tp2, pp, mbs, nb;
    int64_t nv_tp1, nv_tp2, nv_dp, nv_pp;
} model_parallel_t;

/* Expert parallelism of a mixture of experts (model_job_t.experts_par; zero: none). */
typedef struct model_expert_parallel {
    int64_t ep;  /* the experts split over ep GPUs of the data-parallel group, tokens exchanged by
                    alltoall; 0 or 1: none */
    int64_t etp; /* expert tensor parallelism: each expert split over etp GPUs; 0 or 1: none */
} model_expert_parallel_t;

/* Activation recomputation (Korthikanti et al. 2022). */
typedef enum model_recompute {
    MODEL_RECOMPUTE_NONE = 0,      /* keep every activation (default) */
    MODEL_RECOMPUTE_SELECTIVE = 1, /* recompute the attention core (scores, softmax, dropout, AV) */
    MODEL_RECOMPUTE_FULL = 2       /* keep each block's input; the backward re-runs the forward */
} model_recompute_t;

/* The attention kernel. */
typedef enum model_attention {
    MODEL_ATTENTION_FLASH = 0,       /* fused (flash) attention, scores never in HBM (default) */
    MODEL_ATTENTION_MATERIALIZED = 1 /* 2021-era Megatron: b*h*l^2 scores written, softmax and
                                        dropout as separate vector kernels, two batched GEMMs */
} model_attention_t;

/* How tensor parallelism communicates in 1d. */
typedef enum model_seqpar {
    MODEL_SEQPAR_ON = 0, /* Megatron sequence parallelism: all-gather / reduce-scatter pairs (default) */
    MODEL_SEQPAR_OFF = 1 /* plain Megatron TP: all-reduces in fwd and bwd, LayerNorm and dropout on
                            the whole sequence */
} model_seqpar_t;

/* Data-parallel gradient communication. */
typedef enum model_dp_comm {
    MODEL_DP_SHARDED = 0,   /* the reference's: per-layer all-gather and reduce-scatter overlapped with
                               one layer, optimizer states sharded over dp (ZeRO-1 style; default) */
    MODEL_DP_ALLREDUCE = 1, /* Megatron 2021: one all-reduce of all local gradients after the
                               backward, not overlapped; optimizer states replicated */
    MODEL_DP_ALLREDUCE_OVERLAP = 2, /* Megatron --overlap-grad-reduce: the same all-reduce in
                                      buckets during the last microbatch's backward; what exceeds
                                      that backward, and at least one layer's share, is exposed */
    MODEL_DP_SHARDED_OVERLAP = 3,   /* Megatron-Core --use-distributed-optimizer --overlap-grad-reduce
                                      --overlap-param-gather as it runs: optimizer states sharded as
                                      sharded's; gradients in buckets of model_dp_bucket_params
                                      parameters, each reduce-scattered once the last microbatch's
                                      backward has made it final; each bucket's all-gather dispatched
                                      when the previous bucket's forward of the first microbatch
                                      starts (docs/model-formulas.md, section 16.5) */
    MODEL_DP_FSDP = 4               /* fully sharded data parallelism (ZeRO-3, Megatron-FSDP, PyTorch FSDP2):
                                       parameters, gradients and optimizer states sharded over dp; every
                                       microbatch all-gathers each unit's (block's, edge part's) parameters before
                                       its forward and again before its backward, and reduce-scatters its
                                       gradients after its backward, the collectives one after another on the
                                       data-parallel stream, the next unit's all-gather prefetched under the
                                       current unit's compute (depth 1); 1F1B without interleaving, dense models
                                       (docs/model-formulas.md, section 16.7) */
} model_dp_comm_t;

/* How each microbatch's weight gradients reach the accumulated gradient. */
typedef enum model_grad_accum {
    MODEL_GRAD_ACCUM_FUSED = 0, /* the weight-gradient GEMM accumulates in place (Megatron
                                   --gradient-accumulation-fusion; default: no extra cost) */
    MODEL_GRAD_ACCUM_ADD = 1    /* a separate add per microbatch (PyTorch's AccumulateGrad, Megatron's
                                   main_grad hook before the fusion): read both, write the sum */
} model_grad_accum_t;

/* The precision of the block's GEMMs. */
typedef enum model_precision {
    MODEL_PRECISION_BF16 = 0, /* every GEMM in BF16 (default) */
    MODEL_PRECISION_FP8 = 1   /* Transformer Engine: the block's four Linear GEMMs (qkv, vproj, fc1, fc2)
                                 in FP8 at the system's FP8 peak, a cast kernel before each, FP8
                                 copies of their weights and FP8 copies of their saved inputs
                                 (docs/model.md, "Precision") */
} model_precision_t;
/* How a pass's collectives overlap its own compute (training.tp_comm_overlap; the closed forms are
 * docs/model-formulas.md, section 16). The pass's compute C = max(comp_s, mem_s) runs in `chunks`
 * equal pieces on one stream, its collective (whole time T) in pieces on another:
 * - RING (Transformer Engine's ring exchange, the all-gather before a GEMM): piece 0 works on the
 *   local shard, piece k after ring step k; chunks - 1 steps of T / (chunks - 1) each.
 *   Exposed: max(0, T - C + C / chunks).
 * - PIPELINE (the chunked reduce-scatter after a GEMM): piece k's collective, T / chunks, after
 *   piece k. Exposed: max(T / chunks, T - C + C / chunks).
 * - BULK (the input-gradient reduce-scatter of a column-parallel GEMM's backward beside its
 *   weight-gradient GEMM): chunks = 2, the whole collective after piece 0 (the input gradient) and
 *   beside piece 1. Exposed: max(0, T - C + C / chunks). */
typedef enum model_overlap {
    MODEL_OVERLAP_NONE = 0,
    MODEL_OVERLAP_RING = 1,
    MODEL_OVERLAP_PIPELINE = 2,
    MODEL_OVERLAP_BULK = 3
} model_overlap_t;

/* The exposed communication of a pass that overlaps a collective of total time comm_s with its
 * compute compute_s in chunks pieces (model_overlap_t); comm_s itself for MODEL_OVERLAP_NONE. */
double model_overlap_exposed_s(model_overlap_t method, int64_t chunks, double comm_s, double compute_s);

/* The distributed optimizer's buckets (training.dp_comm sharded-overlap; docs/model-formulas.md,
 * section 16.5). Megatron-Core's default bucket size, in parameters, for a data-parallel group of
 * dp_group ranks: max(40e6, 1e6 x dp_group) (DistributedDataParallelConfig.bucket_size). */
double model_dp_bucket_params(int64_t dp_group);
/* Group n parts (blocks, edge parts) of one model chunk into buckets as Megatron-Core fills them:
 * params[i] is part i's parameter count, parts in backward order (the chunk's last part first); a
 * bucket takes parts until it holds at least bucket_params, then the next one starts; the parts after
 * the last full bucket form one more. bucket_of[i] receives part i's bucket (0: the first
 * reduce-scattered, the last all-gathered). Return the number of buckets (0 when n is 0). Buckets hold
 * whole parts: Megatron-Core closes a bucket after any parameter, so where one part holds more than
 * bucket_params its buckets are smaller than the part (docs/model-formulas.md, section 16.5). */
int model_dp_buckets(const double *params, int n, double bucket_params, int *bucket_of);

/* How the context-parallel group (2d-seqp's tp2) exchanges K and V for the attention. */
typedef enum model_cp_comm {
    MODEL_CP_ALLGATHER = 0, /* the reference's: K and V all-gathered before the attention (default) */
    MODEL_CP_RING = 1       /* Megatron-Core: K and V passed around the cp ranks in tp2 - 1 ring steps
                               under the attention's tp2 pieces (MODEL_OVERLAP_RING) */
} model_cp_comm_t;

/* Pipeline schedules with a closed form (pipeline.c, model_pipeline_form). */
typedef enum model_pipeline {
    MODEL_PIPELINE_1F1B = 0,
    MODEL_PIPELINE_GPIPE = 1,
    MODEL_PIPELINE_ZB_H1 = 2,    /* Qi et al., "Zero Bubble Pipeline Parallelism", arXiv 2401.10241 */
    MODEL_PIPELINE_DUALPIPE = 3, /* DeepSeek-V3 technical report, arXiv 2412.19437 */
    MODEL_PIPELINE_ZB_V = 4      /* the V-shape zero-bubble schedule, arXiv 2401.10241 section 6 */
} model_pipeline_t;

/* What a training run does beyond the transformer blocks. Corrected model only; the reference
 * ignores it. Every field's zero value is the default and reproduces the model without it. */
typedef struct model_training {
    model_recompute_t recompute;
    model_seqpar_t sequence_parallel; /* 1d only: MODEL_SEQPAR_OFF needs strategy 1d */
    model_attention_t attention;
    model_dp_comm_t dp_comm;
    int embedding;      /* 1: word/position embedding on the first stage, final LayerNorm, vocab GEMM
                           and cross-entropy on the last, tied weights (needs model.vocab > 0) */
    int optimizer_step; /* 1: the Adam step, HBM-bound over the local parameters */
    int64_t interleave; /* virtual pipeline stages per GPU; 0 or 1: plain 1F1B */
    model_grad_accum_t grad_accumulation;
    model_precision_t precision; /* MODEL_PRECISION_FP8 needs system.fp8_matrix_tflop_per_s > 0 */
    int tp_comm_overlap;     /* 1: Megatron-Core / Transformer Engine --tp-comm-overlap: each tensor-parallel
                                all-gather and reduce-scatter of a block runs in chunks under the GEMM it
                                feeds or follows (model_overlap_t; 1d and 2d-seqp, sequence parallelism on,
                                no full recomputation) */
    model_cp_comm_t cp_comm; /* strategy 2d-seqp: MODEL_CP_RING needs it */
    int pp_comm_overlap;     /* 1: Megatron-Core's overlap_p2p_comm: with the interleaved schedule (interleave
                                > 1) a stage's sends do not hold up its compute and each receive is posted
                                ahead, so only the pipeline's fill and drain carry the transfers
                                (docs/model-formulas.md, section 16.6); without interleaving Megatron-Core
                                turns it off and sends and receives go as batched pairs, which the model
                                charges already: no change */
    model_pipeline_t pipeline; /* MODEL_PIPELINE_1F1B (0), or MODEL_PIPELINE_ZB_H1: the zero-bubble schedule,
                                  the bubble less 2 (pp - 1) W (W: a stage's weight gradients per
                                  microbatch, model_layer_wgrad_s), so (pp - 1)(F + B - W) with equal
                                  stages; needs interleave 1 and at least pp microbatches */
    int fp8_param_gather; /* 1: Megatron-Core --fp8-param-gather (NeMo's FP8 recipes set it): the GEMM weights
                             of the FP8 layers are stored in FP8 (Transformer Engine's fp8_model_init), one
                             byte per parameter, with no BF16 copy; the FP8 transpose is still kept, the
                             gradients stay BF16 and the distributed optimizer's fp32 main weights do the
                             update; its parameter all-gather moves the FP8 bytes. Needs precision fp8,
                             dp_comm sharded or sharded-overlap and no experts */
} model_training_t;

/* One job: what to estimate. system.nvlink_size is the NVLink domain size in effect. */
typedef struct model_job {
    model_transformer_t model;
    model_system_t system;
    int64_t gpus;
    int64_t global_batch; /* sequences per iteration */
    model_parallel_t par;
    model_compat_t compat;
    model_training_t training;           /* zero: none of it (see model_training_t) */
    model_expert_parallel_t experts_par; /* MoE: ep and etp (zero for a dense model) */
} model_job_t;

/* One MoE block of one microbatch on one GPU, closed form (docs/model-formulas.md, "Mixture of
 * experts"). tokens = mbs x l / tp (the sequence-parallel shard each GPU routes). */
typedef struct model_moe_block {
    double tokens;              /* T: tokens one GPU routes */
    double router_tflop;        /* forward: 2 T e E */
    double expert_tflop;        /* forward: grouped GEMMs of the experts on this GPU: (k T c + s T)
                                   x (3 or 2) x 2 e f_e, c the capacity factor (1 dropless); etp > 1
                                   gathers etp k T c tokens on f_e / etp: the same */
    double dense_ffn_tflop;     /* forward: what the dense block's feed-forward network would cost */
    double a2a_bytes;           /* dispatch (and again combine), sent by one GPU each way:
                                   T e bytes k (ep - 1) / ep */
    double a2a_time_s;          /* one alltoall of T e bytes k (the whole buffer) over ep GPUs */
    double expert_weight_bytes; /* the expert weights one GPU holds: (E / (ep etp) + s) x mlp_e x bytes */
    double experts_per_gpu;     /* E / ep */
} model_moe_block_t;

/* Fill *out for job (corrected model; bytes = 2 per element, BF16 activations and weights). Return
 * MODEL_OK, or MODEL_EINVAL for a dense model or a layout whose ep does not divide E. */
int model_moe_block(const model_job_t *job, model_moe_block_t *out);

/* The groups of a MoE layout, as Megatron-Core forms them (megatron/core/parallel_state.py,
 * initialize_model_parallel: the expert grid orders ranks expert-tensor, expert, expert-data,
 * pipeline, innermost first, over the same tp x dp ranks of a stage as the dense grid): the etp group
 * is etp consecutive ranks, the ep group ep ranks etp apart, the expert-data-parallel group the dp tp / (ep
 * etp) ranks holding the same experts. *ep_t and *edp_t: their members per NVLink domain. */
void model_expert_groups(const model_job_t *job, int64_t *ep, int64_t *ep_t, int64_t *edp, int64_t *edp_t);

/* ---- presets ---------------------------------------------------------------------------- */

/* Look a preset up by exact name. Return MODEL_OK and fill *out, or MODEL_EINVAL. */
int model_system_preset(const char *name, model_system_t *out);
int model_transformer_preset(const char *name, model_transformer_t *out);
/* Preset names, for help text and did-you-mean: index 0..count-1, NULL past the end. */
const char *model_system_preset_name(size_t index);
const char *model_transformer_preset_name(size_t index);
/* The NVLink domain of a preset's machine, which the command line takes as nvlink_size unless one is
 * given later: the preset's nvlink_size for the systems of today's datasheets (H100, DGX-H100,
 * DGX-H200, DGX-B200, GB200-NVL72: 72, GB300-NVL72: 72); 0 for the reference's systems (A100, H200,
 * B200, B200-next) and DGX-A100, whose domain stays the scenario's nvlink_size (8 by default, as
 * in the reference), and for unknown names. */
int64_t model_system_preset_domain(const char *name);
/* One line describing a preset (static storage), NULL if unknown. */
const char *model_system_preset_summary(const char *name);
const char *model_transformer_preset_summary(const char *name);

const char *model_strategy_name(model_strategy_t s); /* "1d", "2d", "2d-seqp" */
int model_strategy_parse(const char *name, model_strategy_t *out);
const char *model_compat_name(model_compat_t c); /* "reference", "corrected" */
int model_compat_parse(const char *name, model_compat_t *out);
const char *model_recompute_name(model_recompute_t r); /* "none", "selective", "full" */
int model_recompute_parse(const char *name, model_recompute_t *out);
const char *model_attention_name(model_attention_t a); /* "flash", "materialized" */
int model_attention_parse(const char *name, model_attention_t *out);
const char *model_dp_comm_name(model_dp_comm_t d); /* "sharded", "allreduce", "allreduce-overlap",
                                                      "sharded-overlap", "fsdp" */
int model_dp_comm_parse(const char *name, model_dp_comm_t *out);
const char *model_grad_accum_name(model_grad_accum_t g); /* "fused", "add" */
int model_grad_accum_parse(const char *name, model_grad_accum_t *out);
const char *model_precision_name(model_precision_t p); /* "bf16", "fp8" */
int model_precision_parse(const char *name, model_precision_t *out);
const char *model_overlap_name(model_overlap_t m); /* "none", "ring", "pipeline" */
const char *model_cp_comm_name(model_cp_comm_t c); /* "allgather", "ring" */
int model_cp_comm_parse(const char *name, model_cp_comm_t *out);

/* ---- validation ------------------------------------------------------------------------- */

/* The first invalid field of a job: field is a scenario JSON path ("parallel.tp", "gpus",
 * "system.hbm_capacity_gb", ...), value its offending value as text, allowed what would be valid. */
typedef struct model_issue {
    char field[48];
    char value[48];
    char allowed[160];
} model_issue_t;

/* The most transformer blocks a model may have. The model walks the layers (the distributed
 * optimizer's buckets, a pipeline stage's blocks), so the count bounds its time; real models have a
 * few hundred. */
#define MODEL_MAX_LAYERS INT64_C(100000)

/* Check a job against every rule the model needs, in this order: the system (positive rates and
 * sizes, efficiencies in (0, 1], latencies >= 0), the model (positive sizes, at most
 * MODEL_MAX_LAYERS layers, heads dividing hidden), the degrees (positive; tp = tp1 x tp2; tp1 dividing heads
 * and hidden; 2d: tp2 dividing hidden; pp dividing layers), dp*tp*pp == gpus (MODEL_EINVAL with field
 * "parallel": the caller may treat it as "no result" rather than bad input), dp dividing the global batch,
 * mbs dividing global_batch/dp, then the nv counts (each divides its group; their product is at most
 * nvlink_size), then, in the corrected model only, the training fields (fields "training.*":
 * known enum values; sequence parallelism off only with 1d; embedding only with vocab > 0;
 * interleave >= 0, dividing layers/pp, and with
 * interleave > 1 pp > 1 and the microbatch count a multiple of pp, as Megatron requires). Fill
 * *issue (may be NULL) with the first failure. */
int model_job_check(const model_job_t *job, model_issue_t *issue);

/* Layout arithmetic shared by every caller that derives degrees (pure, O(n) at most).
 * model_gcd: the greatest common divisor of a, b >= 0 (gcd(a, 0) = a).
 * model_divisor_upto: the largest divisor of n >= 1 that is at most cap (1 when cap < 2).
 * model_nvlink_counts: the NVLink counts nv[] of the groups (tp1, tp2, dp, pp), innermost first as
 * Megatron orders ranks: a job of at most nvlink_size GPUs keeps every group whole in one domain;
 * otherwise the domain is filled innermost-first, each group taking the largest divisor of its size
 * that still fits beside the counts before it. An nv[i] > 0 on entry is a given count: it is kept,
 * and its room is taken before any other is derived. */
int64_t model_gcd(int64_t a, int64_t b);
int64_t model_divisor_upto(int64_t n, int64_t cap);
void model_nvlink_counts(int64_t gpus, int64_t nvlink_size, const int64_t group[4], int64_t nv[4]);

/* ---- collectives ------------------------------------------------------------------------ */

typedef enum model_coll_op {
    MODEL_COLL_NONE = 0,
    MODEL_COLL_ALLREDUCE,
    MODEL_COLL_ALLGATHER,
    MODEL_COLL_REDUCESCATTER,
    MODEL_COLL_BROADCAST,
    MODEL_COLL_REDUCE,
    MODEL_COLL_P2P,
    MODEL_COLL_ALLTOALL /* every rank sends volume / n to every rank (expert parallelism) */
} model_coll_op_t;
const char *model_coll_op_name(model_coll_op_t op); /* "allreduce", ..., "p2p", "none" */

/* Which parallel group a collective runs in: the tensor group (1d: tp; 2d/2d-seqp: tp1 = m1),
 * the second tensor group (tp2 = m2: SUMMA rows or the context-parallel sequence group), the
 * data-parallel group, or the pipeline neighbours. MODEL_GROUP_TP is the whole tensor group
 * (tp1 x tp2) of the vocab-parallel embedding and output layer; in 1d it is the tp group. */
typedef enum model_group {
    MODEL_GROUP_TP1,
    MODEL_GROUP_TP2,
    MODEL_GROUP_DP,
    MODEL_GROUP_PP,
    MODEL_GROUP_TP,
    MODEL_GROUP_EP, /* the expert-parallel group of a MoE block's dispatch and combine alltoalls */
    MODEL_GROUP_ETP /* the expert-tensor-parallel group (etp > 1): the routed tokens' all-gather before
                       the expert GEMMs and the reduce-scatter after them */
} model_group_t;

/* Time of one collective (docs/model-formulas.md, section 4.2). volume_gb: the full (unsharded) buffer, as
 * nccl-tests' "size". group_size n, per_domain t = members of the group in one NVLink domain
 * (1 <= t <= n). Reference: the published two-tier ring formula. Corrected: see docs/collectives.md. */
double model_collective_time_s(const model_system_t *sys, model_compat_t compat, model_coll_op_t op,
                               double volume_gb, int64_t group_size, int64_t per_domain);

/* ---- the layer table -------------------------------------------------------------------- */

#define MODEL_MAX_COLLS 8
#define MODEL_BLOCK_LAYERS                                                                                   \
    23 /* 14; +3 with materialised attention (fusedla split in four); +1 rope; +1 wgrad-add;                 \
          +4 FP8 casts (qkv-cast, vproj-cast, fc1-cast, fc2-cast) */
#define MODEL_EDGE_LAYERS 4 /* embedding; final LayerNorm, output GEMM, loss */
#define MODEL_MAX_GEMMS                                                                                      \
    6 /* forward 1; backward 2 (input and weight gradients); + 1 recomputed; twice that for                  \
        a MoE block's experts (the routed and the shared experts' grouped GEMMs) */

/* One GEMM, C (m x n) = A (m x k) B (k x n), batch independent products of that shape in one
 * kernel (the batched attention GEMMs; 1 otherwise). tile_m .. time_s are filled by
 * model_gemm_time_s. */
typedef struct model_gemm {
    int64_t m, n, k, batch;
    int64_t tile_m, tile_n; /* the output tile chosen */
    int64_t tiles;          /* batch x ceil(m / tile_m) x ceil(n / tile_n); INT64_MAX past it */
    int64_t split_k;        /* slices of k per tile (1 unless tiles < sm_count) */
    int64_t waves;          /* ceil(tiles x split_k / sm_count); INT64_MAX past it (the time is
                             * taken from the exact counts, in doubles) */
    double time_s;          /* waves x one tile's time (no launch overhead, no HBM roofline) */
} model_gemm_t;

/* Time of one GEMM's tiles on a GPU of sm_count SMs sustaining tflop_per_s in all (the corrected
 * model's GEMM rule, docs/model.md, "GEMM time"; callers pass the GEMM's efficiency times the dense
 * peak of its precision): the output is cut into tiles of one of the shapes cuBLAS/CUTLASS use for
 * large tensor-core GEMMs (128 x 256, 256 x 128, 128 x 128; a side longer than m or n is cut to it,
 * in multiples of 16), the tiles run in waves of sm_count (one tile per SM at a time; with fewer
 * tiles than SMs, k is split into split_k = min(sm_count / tiles, ceil(k / 64)) slices), and one
 * tile takes 2 tile_m tile_n ceil(k / split_k) FLOP at one SM's share of the rate:
 *     time = waves x 2 tile_m tile_n ceil(k / split_k) / (tflop_per_s / sm_count).
 * The tile is the one with the least time (ties: the first in the order above), as the library's
 * heuristic picks the kernel that wastes least of the last wave. With sm_count <= 0 it is the flat
 * rule 2 m n k batch / tflop_per_s, tiles, split_k and waves 0. Pure; fills g->tile_m .. g->time_s
 * and returns g->time_s (0 for an empty GEMM). */
double model_gemm_time_s(int64_t sm_count, double tflop_per_s, model_gemm_t *g);

typedef struct model_coll {
    model_coll_op_t op;
    model_group_t group;
    double volume_gb; /* full buffer of the whole collective (all SUMMA panels together) */
    int64_t group_size;
    int64_t per_domain;
    double time_s; /* model_collective_time_s of the whole volume (SUMMA: of one panel) */
} model_coll_t;

typedef struct model_pass {
    double flops_tflop;
    double hbm_gb;
    model_coll_t colls[MODEL_MAX_COLLS];
    int n_colls;
    double comp_s;           /* kernel_overhead + F / (eff * rate), or + the gemms' time_s (below) */
    double mem_s;            /* HBM time M / bandwidth (not only the exposed part) */
    double mem_exposed_s;    /* max(mem_s - comp_s, 0) */
    double comm_s;           /* exposed communication time charged to this pass */
    model_overlap_t overlap; /* NONE, or how its collectives (one, or the context-parallel ring's
                                K/V and gradient exchanges, all of one group) run under its compute;
                                then comm_s is model_overlap_exposed_s of their summed whole times
                                and of comp_s + mem_exposed_s */
    int64_t chunks;          /* pieces of the overlap (the tensor group's size) */
    double time_s;           /* comp_s + mem_exposed_s + comm_s */
    /* Corrected model with system.sm_count > 0 only: the GEMMs of a tensor-core layer's pass (none
     * for fused attention and vector layers, none without an SM count, none at all in the
     * reference); the pass's comp_s is then kernel_overhead + the sum of their time_s
     * (model_gemm_time_s). */
    model_gemm_t gemms[MODEL_MAX_GEMMS];
    int n_gemms;
} model_pass_t;
/* With recomputation, a recomputed layer's backward pass also carries its forward pass: the
 * forward's FLOPs, HBM bytes, collectives, comp_s, mem_s, mem_exposed_s, comm_s and time_s are
 * added to the backward's, so time_s = comp_s + mem_exposed_s + comm_s still holds. */

/* SA and MLP are the block's modules (the MLP module also holds wgrad-add, the per-microbatch
 * gradient accumulation of the whole block's weights, with MODEL_GRAD_ACCUM_ADD); EMBEDDING (first pipeline
 * stage) and OUTPUT (last stage: final LayerNorm, vocab GEMM, loss) are the edge layers of model_block_t. */
typedef enum model_module {
    MODEL_MODULE_SA,
    MODEL_MODULE_MLP,
    MODEL_MODULE_EMBEDDING,
    MODEL_MODULE_OUTPUT
} model_module_t;

typedef struct model_layer {
    const char *name; /* "qkv", "fusedla", ..., "ln1" (static storage) */
    model_module_t module;
    int tensor_core;   /* 1: matrix rate; 0: vector rate */
    int summa_overlap; /* 1: SUMMA panel pipelining rule for comm (5.3) */
    int fp8_gemm;      /* 1: a GEMM at the FP8 peak (training.precision fp8; its cast is the layer before) */
    int attention_kernel; /* 1: the fused (flash) attention kernel (system.attention_efficiency) */
    double weights_gb;
    double weight_grads_gb;
    double activations_gb; /* kept for the backward pass, per microbatch */
    model_pass_t fwd, bwd;
} model_layer_t;

typedef struct model_block {
    model_layer_t layers[MODEL_BLOCK_LAYERS];
    int n_layers;
    double t_fwd_s, t_bwd_s; /* one block, one microbatch; t_bwd_s includes any recomputation */
    double flops_tflop;      /* fwd + bwd (+ recomputation) */
    double activations_gb;   /* A_blk: kept for the backward, after selective recomputation */
    double weights_gb;       /* W_blk */
    double fp8_weights_gb;   /* precision fp8: Transformer Engine's FP8 copies of the GEMM weights; else 0 */
    double fp8_param_saving_gb; /* training.fp8_param_gather: what storing the FP8 GEMM weights in one byte
                                   instead of the element size saves, per block; the stored weights are
                                   weights_gb less this, and so is the data-parallel all-gather; else 0 */
    double checkpoint_gb;       /* full recomputation: the block input kept per microbatch; else 0 */
    double output_gb;           /* the block output one rank holds (its last LayerNorm's input): what a
                                   pipeline stage sends and what full recomputation keeps */
    /* Edge layers (corrected, training.embedding): module EMBEDDING on the first stage, OUTPUT on
     * the last. Their times per microbatch, weights and kept activations per stage. With one
     * stage and tied weights the output layer's weights are the embedding's (counted once). */
    model_layer_t edges[MODEL_EDGE_LAYERS];
    int n_edges;
    double first_t_fwd_s, first_t_bwd_s, last_t_fwd_s, last_t_bwd_s;
    double first_weights_gb, last_weights_gb;
    double first_activations_gb, last_activations_gb;
    double expert_weights_gb;          /* MoE: the routed experts' weights of one block on one GPU (part of
                                          weights_gb), whose gradients are reduced over the expert-data-parallel
                                          group (model_expert_dp); 0 for a dense model */
    double expert_fp8_param_saving_gb; /* training.fp8_param_gather with experts: the part of
                                          fp8_param_saving_gb that is the routed experts' (their
                                          all-gather over the expert-data-parallel group moves
                                          expert_weights_gb less this); else 0 */
} model_block_t;

/* Build the layer table of one block (and the edge layers) for job->par and job->training (job
 * must pass model_job_check, except that dp/gpus/global_batch are not read; pp is read only for
 * the tied embedding). */
void model_block_build(const model_job_t *job, model_block_t *block);

/* ---- the iteration ---------------------------------------------------------------------- */

typedef struct model_summary {
    model_parallel_t par;
    int64_t n_microbatches;
    int64_t layers_per_stage;
    double iteration_time_s;
    double throughput_samples_per_s;
    /* breakdown: adds up to iteration_time_s */
    double compute_s, memory_s, tp_comm_s, pp_comm_s, dp_comm_s, bubble_s;
    double flops_per_gpu_tflop;
    /* data-parallel detail: one collective of W_blk, and the exposed totals */
    double dp_allgather_one_s, dp_reducescatter_one_s;
    double dp_allgather_s, dp_reducescatter_s;
    /* pipeline detail */
    double p2p_volume_gb, p2p_one_s, pp_fwd_s, pp_bwd_s;
    /* memory per GPU */
    double weights_gb, grads_gb, optimizer_gb, activations_gb, memory_gb;
    double fp8_weights_gb; /* precision fp8: the FP8 weight copies (in memory_gb); else 0 */
    int fits;
    /* block summary */
    double block_t_fwd_s, block_t_bwd_s, block_flops_tflop, block_activations_gb, block_weights_gb;
    /* corrected-model training detail (0 without job->training, except interleave) */
    int64_t interleave;        /* virtual stages per GPU in effect (1: plain 1F1B) */
    double optimizer_s;        /* the optimizer step; included in memory_s */
    double dp_allreduce_s;     /* MODEL_DP_ALLREDUCE: the gradient all-reduce; included in dp_comm_s */
    double embedding_sync_s;   /* tied-embedding gradient all-reduce first<->last stage; in dp_comm_s */
    double stage_fwd_bwd_s[2]; /* one microbatch on the first / last stage, p2p included */
    int slowest_stage;         /* 0: first, 1: last, 2: a middle one (leading dense blocks; the work term is
                                  nmb x that stage's time) */
    model_expert_parallel_t experts_par; /* MoE: the ep and etp of the layout (zero: dense) */
    double fsdp_gathered_gb;   /* MODEL_DP_FSDP: the full parameters and gradients of the units in flight
                                  (4 x the largest unit: the one computing, the one prefetched, and in
                                  the backward their two gradients before the reduce-scatter); in
                                  memory_gb; else (and with a data-parallel group of 1) 0 */
    model_pipeline_t pipeline; /* the pipeline schedule estimated (corrected; else 1F1B) */
} model_summary_t;

typedef struct model_estimate {
    model_block_t block;
    model_summary_t summary;
} model_estimate_t;

/* Evaluate one job. Return MODEL_EINVAL (and nothing else filled) if model_job_check fails.
 * The corrected model with job->training (docs/validation.md): each pipeline stage's time per
 * microbatch is T_i = D/pp (t_fwd + t_bwd) + its edge layers + 2 v p2p; the iteration is
 * nmb max_i T_i + (sum_i T_i - max_i T_i) / v + the data-parallel communication + the optimizer
 * step. With equal stages and v = 1 this is the reference's nmb T + (pp-1) T. */
/* A MoE with leading dense blocks (model.moe.first_dense > 0): stage i holds its share of them, timed
 * from the dense block table (the job without experts), the rest from out->block (the MoE table),
 * and the iteration is the same form over stages that differ (docs/model-formulas.md, section 18.3). */
int model_estimate(const model_job_t *job, model_estimate_t *out);

/* ---- throughput as people read it: model FLOPs, MFU, tokens ------------------------------ */

/* Model FLOPs of one token of training (forward and backward, no recomputation), as Megatron-LM's
 * num_floating_point_operations and NeMo's GPT-3 formula count them (docs/model.md, "MFU"):
 * 12 L h^2 (2 + s/h + f/h) + 6 h V for L layers, hidden h, sequence s, feed-forward f, vocab V.
 * The attention scores count the full s x s square (no causal halving). */
double model_flops_per_token(const model_transformer_t *m);

/* The dense tensor-core peak of a precision, TFLOP/s per GPU: matrix_tflop_per_s for BF16,
 * fp8_matrix_tflop_per_s for FP8 (0 if the system has none). */
double model_peak_tflop_per_s(const model_system_t *sys, model_precision_t precision);

typedef struct model_throughput {
    double model_tflops_per_gpu; /* model FLOPs of the iteration / iteration time / GPUs, in TFLOP/s */
    double tokens_per_s_per_gpu; /* global_batch x seq_len / iteration time / GPUs */
    double mfu;                  /* model_tflops_per_gpu / the dense peak of the precision in effect */
} model_throughput_t;

/* The throughput of a job whose iteration takes iteration_time_s (> 0; else all zero). The
 * precision in effect is job->training.precision in the corrected model, BF16 in the reference. */
void model_throughput(const model_job_t *job, double iteration_time_s, model_throughput_t *out);

/* ---- search ----------------------------------------------------------------------------- */

typedef struct model_search_result {
    model_summary_t *results; /* best first; ties keep enumeration order */
    int n_results;
    int64_t candidates_evaluated;
    int64_t candidates_feasible;
} model_search_result_t;

/* Enumerate the reference's search space (docs/model-formulas.md, section 9) for every strategy whose bit
 * (1 << strategy) is set in strategy_mask, for job->gpus GPUs, job->global_batch and
 * job->system.nvlink_size, and keep the top_k feasible candidates by throughput. job->par is
 * ignored. Memory: O(top_k), never every candidate. Return MODEL_OK (even with no feasible
 * candidate: n_results == 0), MODEL_EINVAL for a bad model/system/size, MODEL_ENOMEM.
 * Complexity: linear in the number of candidates. */
int model_search_run(const model_job_t *job, unsigned strategy_mask, int top_k, model_search_result_t *out);
/* job->training applies to every candidate; a candidate that violates a training rule
 * (interleave, sequence parallelism off outside 1d) is skipped, not counted as evaluated. */
void model_search_result_destroy(model_search_result_t *res);
/* model_search_run with the pipeline schedule as a dimension: every schedule whose bit (1 <<
 * model_pipeline_t) is set in pipeline_mask (GPipe excluded) is tried on every layout where its rules
 * hold (model_job_check: microbatches, pp parity, interleave 1); a layout keeps its fastest schedule
 * that fits (ties: the lower schedule number), its summary's pipeline names it. With pp = 1 only 1F1B
 * when several are asked (nothing to schedule). Schedules other than 1F1B need the corrected model.
 * Each (layout, schedule) tried counts in candidates_evaluated. model_search_run is this with the
 * job's own schedule alone. */
int model_search_run_pipelines(const model_job_t *job, unsigned strategy_mask, unsigned pipeline_mask,
                               int top_k, model_search_result_t *out);

/* ---- calibration: the FLOP efficiency fitted to measured runs ---------------------------------- */

/* The grid of efficiencies tried: 0.40, 0.405, ..., 1.00 (121 points). Exhaustive, and fine enough
 * that one step moves a prediction by well under a percent. */
#define MODEL_CALIBRATE_FROM 0.40
#define MODEL_CALIBRATE_TO 1.00
#define MODEL_CALIBRATE_STEP 0.005

/* Errors of predicted iteration times against measured ones, in percent of the measured time:
 * 100 (predicted - measured) / measured per run, then the mean and largest absolute value and the
 * root mean square over the runs. */
typedef struct model_calibrate_errors {
    double mean_abs_pct, max_abs_pct, rms_pct;
} model_calibrate_errors_t;

typedef struct model_calibration {
    size_t n;                         /* runs */
    int fp8;                          /* 1: the fit is of system.fp8_flop_efficiency (corrected FP8 runs on
                                         a system that has one), 0: of system.flop_efficiency */
    double current_efficiency;        /* jobs[0]'s fitted efficiency, as given */
    model_calibrate_errors_t current; /* every run at its own job's efficiency */
    double best_efficiency;           /* the fit: a grid point */
    model_calibrate_errors_t best;    /* every run at best_efficiency */
    int at_edge;                      /* best_efficiency is an end of the grid */
    int loo_valid;                    /* leave-one-out was computed (n >= 2) */
    model_calibrate_errors_t loo;     /* of loo_error_pct */
    double *loo_efficiency;           /* [n] when loo_valid: fitted to every run but run i */
    double *loo_error_pct;            /* [n] when loo_valid: run i's error at loo_efficiency[i] */
} model_calibration_t;

/* Fit the FLOP efficiency to n measured runs: predict job i (model_estimate, the system's
 * flop_efficiency replaced and nothing else changed) at every grid point and keep the point with the
 * least sum of squared percentage errors against measured_s[i] (seconds per iteration); ties go to
 * the lower efficiency. The runs should share one system (the caller groups them). Leave-one-out
 * predicts each run with the efficiency fitted to the other runs alone, which estimates the error on
 * a run the fit has not seen; it needs n >= 2 (else loo_valid is 0 and the arrays are NULL).
 * Cost: (grid points + 1) x n estimates. Return MODEL_OK and *out (free it with
 * model_calibrate_destroy); MODEL_EINVAL if n is 0, a measured time is not positive and finite or
 * the model rejects a job (model_job_check says why), MODEL_ENOMEM; on failure *out holds nothing to
 * free. Deterministic. */
int model_calibrate_fit(const model_job_t *jobs, const double *measured_s, size_t n,
                        model_calibration_t *out);
void model_calibrate_destroy(model_calibration_t *fit); /* accepts a zeroed struct */

/* ---- pipeline schedules with the backward split (pipeline.c) ---------------------------------------- */

/* The weight-gradient part (W) of a layer's backward: for a layer with weights on the matrix units
 * its forward's compute time (dw = x^T dy is the forward GEMM's size), capped at its backward's; 0 for
 * a layer without weights, and for one whose backward runs as one piece with its communication (a
 * SUMMA layer with panel collectives, a GEMM with tensor-parallel collectives in chunks under it,
 * model_overlap_t). The rest of the backward is B (input gradients, recomputation). */
double model_layer_wgrad_s(const model_layer_t *ly);
double model_layer_wgrad_tflop(const model_layer_t *ly); /* its FLOPs, the same rule */

typedef struct model_pipeline_form {
    double work_s;                  /* m (F + B + W) */
    double bubble_s;                /* the schedule's idle time on the critical stage */
    double step_s;                  /* work_s + bubble_s */
    double activation_microbatches; /* the most microbatches' activations one stage holds */
    double weight_copies;           /* copies of a stage's parameters per GPU (DualPipe 2) */
} model_pipeline_form_t;

/* The closed form of schedule s with equal stages: per stage and microbatch f_s forward, b_s input
 * gradients, w_s weight gradients (b_s + w_s the whole backward), m microbatches, pp stages; fb_s
 * (DualPipe only) one forward overlapped with another microbatch's backward, negative for no
 * overlap (f_s + b_s + w_s). MODEL_EINVAL outside the form's domain: ZB-H1 needs m >= pp and w_s <=
 * min(f_s, b_s); DualPipe pp even, m even and m >= 2 pp (the repository's rule); ZB-V m >= 2 pp,
 * w_s <= b_s and f_s <= b_s + w_s. Formulas: pipeline.c, docs/model-formulas.md. */
int model_pipeline_form(model_pipeline_t s, int64_t pp, int64_t m, double f_s, double b_s, double w_s,
                        double fb_s, model_pipeline_form_t *out);
const char *model_pipeline_name(model_pipeline_t s); /* "1f1b", "gpipe", "zb-h1", "dualpipe", "zb-v" */
int model_pipeline_parse(const char *text, model_pipeline_t *out); /* the names; MODEL_OK or MODEL_EINVAL */

#endif
