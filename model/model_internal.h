/* model_internal.h - declarations shared by the model/ sources; not part of the public API. */
#ifndef STEPSIM_MODEL_INTERNAL_H
#define STEPSIM_MODEL_INTERNAL_H

#include "model.h"

/* The corrected model's usable fraction of the HBM bandwidth. Streaming kernels on the A100 reach
 * about 88-90% of its 2039 GB/s (the best kernels of NVIDIA's GTC 2024 memory talk peak near 90%; an
 * Nsight Compute measurement of a tuned read kernel: 1.80 TB/s, 88%), and HBM3 on the H100 behaves
 * the same way. The reference uses the full bandwidth (docs/model-formulas.md, section 12, quirk 9). */
#define MODEL_I_HBM_EFFICIENCY 0.9

/* The published two-tier ring formula (docs/model-formulas.md, section 4.2), quirks included. */
double model_i_collective_reference_s(const model_system_t *sys, model_coll_op_t op, double volume_gb,
                                      int64_t n, int64_t per_domain);

/* The corrected collective model (collective_corrected.c, documented in docs/collectives.md). */
double model_i_collective_corrected_s(const model_system_t *sys, model_coll_op_t op, double volume_gb,
                                      int64_t n, int64_t per_domain);

/* The training rules of model_job_check (corrected jobs only); issue may be NULL (check.c). */
int model_i_training_check(const model_job_t *job, model_issue_t *issue);

/* Whether a corrected job asks for any training option (then the search checks the training rules
 * per candidate and the iteration is assembled per stage; iteration.c). */
int model_i_training_active(const model_job_t *job);

/* Tensor-parallel communication overlap (overlap.c): attach each tensor-parallel collective of the
 * block's passes to the GEMM it feeds (ring exchange) or follows (pipelined chunks), setting the
 * passes' overlap and chunks; before the passes' times are computed. */
void model_i_tp_overlap_plan(model_block_t *blk);

/* Context parallelism as a ring (overlap.c): the attention core's context-parallel collectives run
 * as a ring exchange under it (MODEL_OVERLAP_RING over tp2). */
void model_i_cp_ring_plan(model_block_t *blk);

/* After recomputation added a forward pass to a backward one: the exposed communication of every
 * overlapped pass again, over its collectives and its whole compute (overlap.c). */
void model_i_overlap_refresh(model_block_t *blk);

/* The distributed optimizer's exposed all-gather and reduce-scatter (training.dp_comm sharded-overlap,
 * distopt.c): fills dp_allgather_one_s, dp_reducescatter_one_s (the first bucket's of each),
 * dp_allgather_s, dp_reducescatter_s and dp_comm_s of out (layers_per_stage set). */
void model_i_distopt(const model_job_t *job, const model_block_t *blk, model_summary_t *out);
/* With experts the distributed optimizer's closed form walks the first stage's parts (blocks and the
 * two edge parts) in arrays of this size; model_job_check refuses more blocks per stage there. */
#define MODEL_DISTOPT_PARTS_MAX 1026

/* Fully sharded data parallelism (training.dp_comm fsdp, fsdp.c): fills dp_allgather_one_s,
 * dp_reducescatter_one_s, dp_allgather_s (the compute's waits for all-gathers), dp_reducescatter_s (the
 * reduce-scatters after the last compute) and dp_comm_s of out (n_microbatches, layers_per_stage set). */
void model_i_fsdp(const model_job_t *job, const model_block_t *blk, model_summary_t *out);
/* The units in flight of a stage under fsdp: 4 x its largest unit (block or edge part), GB per GPU. */
double model_i_fsdp_gathered_gb(const model_block_t *blk, int64_t pp, int stage_first, int stage_last);

/* Exposed pipeline transfers with overlapped sends and receives on the interleaved schedule
 * (training.pp_comm_overlap, p2p_overlap.c; out's p2p_one_s, n_microbatches, layers_per_stage set). */
double model_i_p2p_overlap_exposed_s(const model_job_t *job, const model_block_t *blk,
                                     const model_summary_t *out);

/* Fill the iteration summary of a job whose block table blk is built (iteration.c). */
void model_i_summarize(const model_job_t *job, const model_block_t *blk, model_summary_t *out);

#endif
