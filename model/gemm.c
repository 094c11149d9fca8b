/* gemm.c - the corrected model's GEMM time: tile and wave quantisation over the GPU's SMs
 * (model.h, model_gemm_time_s; docs/model.md, "GEMM time").
 *
 * A GEMM kernel cuts its m x n output into tiles, one thread block (one SM) per tile at a time; the
 * tiles run in waves of sm_count, and a partly filled last wave takes as long as a full one
 * (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001, sections 2.3 "Typical
 * tile dimensions in cuBLAS and performance" and 3 "Dimension quantization effects"). The tile
 * shapes are the large ones cuBLAS and CUTLASS use for 16-bit (and, with k twice as deep, FP8)
 * tensor-core GEMMs on Ampere, Hopper and Blackwell (per SM): 128 x 256 and 256 x 128 (CUTLASS's default Sm80
 * tensor-op threadblock tile, GemmShape<128, 256, 64> in
 * include/cutlass/gemm/device/default_gemm_configuration.h; cuBLAS's Hopper kernels' 128x256x64 and
 * 256x128x64; one SM's half of Blackwell's 2-SM 256 x 256 tile) and the half tile 128 x 128 that cuBLAS falls
 * back to when it fills the last wave better.
 *
 * Small and skinny GEMMs: a dimension shorter than the tile gets a tile cut to it (cuBLASLt has
 * tiles from 8 x 8 up, cublasLtMatmulTile_t), and when there are fewer tiles than SMs the kernel
 * splits k over the idle SMs (split-K; the partial sums' reduction is not charged). Such a GEMM then
 * takes little compute time and the pass's HBM roofline (layers.c) decides its time: bytes moved
 * over the bandwidth. */

#include <math.h>

#include "checked.h"
#include "model_internal.h"

#define TFLOP 1e-12

/* Candidate output tiles (m x n), in order of preference on ties. */
static const int64_t TILE_SHAPES[][2] = {{128, 256}, {256, 128}, {128, 128}};
#define N_TILE_SHAPES (sizeof TILE_SHAPES / sizeof TILE_SHAPES[0])

/* Tile sides are multiples of the tensor-core instruction's 16 rows (mma.m16n8k16 on Ampere; on
 * Hopper and Blackwell the skinny operand goes to the instruction's N side, multiples of 8 or 16). */
#define MMA_GRANULE 16
/* Split-K keeps at least one 64-deep k block per slice (CUTLASS's and cuBLAS's k tile). */
#define SPLIT_K_MIN_DEPTH 64

/* a / b rounded up, for a >= 0 and b > 0 (no a + b - 1 that could overflow) */
static int64_t ceil_div(int64_t a, int64_t b) {
    return a / b + (a % b != 0);
}

/* A count held in a double as int64_t, INT64_MAX past it. */
static int64_t count_i64(double x) {
    int64_t v;
    return checked_double_to_i64(x, &v) ? INT64_MAX : v;
}

/* A tile side on a dimension smaller than the tile: the kernel with the smallest tile that covers
 * it, in steps of the MMA granule. */
static int64_t tile_side(int64_t tile, int64_t dim) {
    if (dim >= tile)
        return tile;
    const int64_t covered = ceil_div(dim, MMA_GRANULE) * MMA_GRANULE;
    return covered < tile ? covered : tile;
}

double model_gemm_time_s(int64_t sm_count, double tflop_per_s, model_gemm_t *g) {
    g->tile_m = g->tile_n = g->tiles = g->waves = g->split_k = 0;
    g->time_s = 0.0;
    if (g->m <= 0 || g->n <= 0 || g->k <= 0 || g->batch <= 0)
        return 0.0;
    if (sm_count <= 0) {
        g->time_s = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch * TFLOP / tflop_per_s;
        return g->time_s;
    }
    const double sm_rate = tflop_per_s / (double)sm_count;
    for (size_t i = 0; i < N_TILE_SHAPES; i++) {
        const int64_t tm = tile_side(TILE_SHAPES[i][0], g->m), tn = tile_side(TILE_SHAPES[i][1], g->n);
        /* the counts in doubles: sizes from input can make them overflow int64_t (then the counts
         * kept for display saturate, checked.h, and the time stays what the doubles say) */
        const double tiles = (double)g->batch * (double)ceil_div(g->m, tm) * (double)ceil_div(g->n, tn);
        /* split-K: fewer tiles than SMs share the idle SMs by slicing k */
        int64_t split = tiles < (double)sm_count ? sm_count / (int64_t)tiles : 1;
        const int64_t max_split = ceil_div(g->k, SPLIT_K_MIN_DEPTH);
        split = split < max_split ? split : max_split;
        const double waves = ceil(tiles * (double)split / (double)sm_count);
        const int64_t depth = ceil_div(g->k, split);
        const double t = waves * 2.0 * (double)tm * (double)tn * (double)depth * TFLOP / sm_rate;
        if (g->tile_m == 0 || t < g->time_s) {
            g->tile_m = tm;
            g->tile_n = tn;
            g->tiles = count_i64(tiles);
            g->split_k = split;
            g->waves = count_i64(waves);
            g->time_s = t;
        }
    }
    return g->time_s;
}
