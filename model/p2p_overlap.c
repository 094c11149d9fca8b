/* p2p_overlap.c - pipeline sends and receives overlapped with compute (training.pp_comm_overlap;
 * docs/model-formulas.md, section 16.6).
 *
 * Megatron-Core's interleaved schedule with overlap_p2p_comm launches each send without waiting for
 * it and posts the receive of the next microbatch's input before the current compute, waiting for it
 * only when that input is needed. A stage's time per microbatch then carries no transfer; what stays
 * exposed is the pipeline's fill and drain: the first microbatch's activation crosses the pp v - 1
 * boundaries between virtual stages before the last one can start, and its gradient crosses them back
 * before the first stage's last backward can end. That holds while one transfer d fits under one
 * microbatch's forward of one model chunk, F_c; beyond it the transfers set the pace. */
#include <math.h>

#include "model_internal.h"

double model_i_p2p_overlap_exposed_s(const model_job_t *job, const model_block_t *blk,
                                     const model_summary_t *out) {
    const double v = (double)(job->training.interleave > 1 ? job->training.interleave : 1);
    const double pp = (double)job->par.pp, nmb = (double)out->n_microbatches, d = out->p2p_one_s;
    const double chunk_fwd_s = blk->t_fwd_s * (double)out->layers_per_stage / v;
    return 2.0 * (pp * v - 1.0) * d + nmb * v * fmax(0.0, d - chunk_fwd_s);
}
