/* pipeline.c - the backward's split into input and weight gradients, and the closed forms of the
 * pipeline schedules with that split.
 *
 * A GEMM y = x w has two backward GEMMs of the forward's size: dx = dy w^T (the input gradient the
 * stage before waits for) and dw = x^T dy (the weight gradient nobody waits for). So a layer with
 * weights on the matrix units spends its forward's compute time on W and the rest of its backward
 * (recomputation included) on B; a layer without weights (attention core, norms, activations) is all
 * B. Closed forms with equal stages, per stage and microbatch F (forward), B (input gradients), W
 * (weight gradients), m microbatches, pp stages:
 * - 1F1B and GPipe: bubble (pp - 1)(F + B + W); 1F1B holds pp microbatches, GPipe m.
 * - ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv 2401.10241, section 3): bubble
 *   (pp - 1)(F + B - W), holding pp microbatches like 1F1B; it needs m >= pp and W <= min(F, B)
 *   (the deferred W's then fit in the drain's gaps).
 * - DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, table 2): each GPU holds two stages
 *   (parameters x2), microbatches enter from both ends; bubble (pp/2 - 1)(F&B + B' - 3W) where B' =
 *   B + W is the whole backward and F&B the time of one chunk's forward overlapped with another's
 *   backward (F + B' without overlap); pp + 1 microbatches held; pp even, m even and m >= 2 pp (the
 *   deepseek-ai/DualPipe repository's rule).
 * - ZB-V (Qi et al., section 6: two chunks per GPU in a V, GPU i holding virtual stages i and
 *   2 pp - 1 - i): bubble (pp - 1)(max(F, B) + B - W) / 2 for the order sim/step/schedule.c runs (the
 *   V-shape phases of the DualPipe repository's dualpipev.py, each steady pair backward first),
 *   derived for it and reproduced by the simulated step; pp microbatches held (1F1B's peak); it needs
 *   m >= 2 pp, W <= B and F <= B + W. At F = B = W it is (pp - 1) F / 2, the last GPU's wait for its
 *   first forward, which the paper's "zero bubble" leaves out (it counts from each GPU's first pass). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "model.h"

/* A layer whose backward runs as one piece with its communication (a SUMMA layer's panels, a GEMM
 * with its tensor-parallel collectives in chunks under it) keeps it whole: no W of its own. */
static int splits(const model_layer_t *ly) {
    if (!ly || !ly->tensor_core || ly->weights_gb <= 0.0)
        return 0;
    if (ly->summa_overlap && ly->bwd.n_colls > 0)
        return 0;
    return !(ly->bwd.overlap != MODEL_OVERLAP_NONE && ly->bwd.n_colls >= 1 && ly->bwd.chunks > 1);
}

double model_layer_wgrad_s(const model_layer_t *ly) {
    if (!splits(ly))
        return 0.0;
    return fmin(ly->fwd.comp_s, ly->bwd.comp_s);
}

double model_layer_wgrad_tflop(const model_layer_t *ly) {
    if (!splits(ly))
        return 0.0;
    return fmin(ly->fwd.flops_tflop, ly->bwd.flops_tflop);
}

int model_pipeline_form(model_pipeline_t s, int64_t pp, int64_t m, double f_s, double b_s, double w_s,
                        double fb_s, model_pipeline_form_t *out) {
    if (!out || pp < 1 || m < 1 || !(f_s >= 0.0) || !(b_s >= 0.0) || !(w_s >= 0.0) || !isfinite(f_s) ||
        !isfinite(b_s) || !isfinite(w_s))
        return MODEL_EINVAL;
    const double p1 = (double)(pp - 1), mm = (double)m, work = mm * (f_s + b_s + w_s);
    out->work_s = work;
    out->weight_copies = 1.0;
    switch (s) {
    case MODEL_PIPELINE_GPIPE:
        out->bubble_s = p1 * (f_s + b_s + w_s);
        out->activation_microbatches = mm;
        break;
    case MODEL_PIPELINE_1F1B:
        out->bubble_s = p1 * (f_s + b_s + w_s);
        out->activation_microbatches = fmin((double)pp, mm);
        break;
    case MODEL_PIPELINE_ZB_H1:
        if (m < pp || w_s > f_s || w_s > b_s)
            return MODEL_EINVAL;
        out->bubble_s = p1 * (f_s + b_s - w_s);
        out->activation_microbatches = (double)pp;
        break;
    case MODEL_PIPELINE_ZB_V:
        if (m < 2 * pp || w_s > b_s || f_s > b_s + w_s)
            return MODEL_EINVAL;
        out->bubble_s = 0.5 * p1 * (fmax(f_s, b_s) + b_s - w_s);
        out->activation_microbatches = (double)pp;
        break;
    case MODEL_PIPELINE_DUALPIPE: {
        if (pp % 2 || m % 2 || m < 2 * pp)
            return MODEL_EINVAL;
        const double full_b = b_s + w_s;
        if (!(fb_s >= 0.0) || !isfinite(fb_s))
            fb_s = f_s + full_b;
        out->bubble_s = (double)(pp / 2 - 1) * (fb_s + full_b - 3.0 * w_s);
        if (out->bubble_s < 0.0)
            return MODEL_EINVAL;
        out->activation_microbatches = (double)(pp + 1);
        out->weight_copies = 2.0;
        break;
    }
    default:
        return MODEL_EINVAL;
    }
    out->step_s = work + out->bubble_s;
    return MODEL_OK;
}

const char *model_pipeline_name(model_pipeline_t s) {
    static const char *const NAMES[] = {"1f1b", "gpipe", "zb-h1", "dualpipe", "zb-v"};
    return (unsigned)s < sizeof NAMES / sizeof NAMES[0] ? NAMES[s] : "unknown";
}

int model_pipeline_parse(const char *text, model_pipeline_t *out) {
    for (int i = 0; i <= MODEL_PIPELINE_ZB_V && text; i++)
        if (strcmp(text, model_pipeline_name((model_pipeline_t)i)) == 0) {
            *out = (model_pipeline_t)i;
            return MODEL_OK;
        }
    return MODEL_EINVAL;
}
