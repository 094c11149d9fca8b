/* presets.c - named GPU systems and transformer models (docs/model-formulas.md, sections 2 and 3,
 * and the DGX nodes and GPT models of Narayanan et al. 2021, docs/validation.md). Tables are const; lookups
 * copy into the caller. */
#include <string.h>

#include "model.h"

typedef struct {
    model_system_t sys;
    const char *summary;
} system_preset_t;

typedef struct {
    model_transformer_t tf;
    const char *summary;
} transformer_preset_t;

/* Fields: name, matrix, vector fp16, vector fp32 (TFLOP/s), HBM GB/s, HBM GB, NVLink GB/s, eff,
 * latency s, IB GB/s, eff, latency s, NVLink domain, NICs per GPU, element GB, mask GB, FLOP
 * efficiency, kernel overhead s, then no FP8, and the SM count (0 for the reference's presets: the
 * flat GEMM time). */
#define SYS_EFF(n, mx, vf16, vf32, hbm, cap, nvl, nvle, nvll, ib, ibe, ibl, nvs, eff, sm)                    \
    {                                                                                                        \
        n, mx, vf16, vf32, hbm, cap, nvl, nvle, nvll, ib, ibe, ibl, nvs, 1, 2e-9, 1e-9, eff, 20e-6, 0, 0, 0, \
            sm                                                                                               \
    }
#define SYS(n, mx, vf16, vf32, hbm, cap, nvl, nvle, nvll, ib, ibe, ibl, nvs)                                 \
    SYS_EFF(n, mx, vf16, vf32, hbm, cap, nvl, nvle, nvll, ib, ibe, ibl, nvs, 0.8, 0)
/* The systems of today's datasheets (docs/model.md, "System presets", cites each figure): dense BF16
 * and dense FP8 peaks (TFLOP/s; the datasheets print twice these "with sparsity"), non-tensor FP16
 * and FP32, HBM GB/s and GB, NVLink GB/s per direction, NIC GB/s per GPU, GPUs per NVLink domain.
 * Efficiencies and latencies as the DGX H100's; the reference's 0.8 FLOP efficiency. */
#define SYS_DS(n, mx, fp8, vf16, vf32, hbm, cap, nvl, ib, nvs, gen)                                          \
    SYS_GEN(n, mx, fp8, vf16, vf32, hbm, cap, nvl, ib, nvs, gen)
/* gen: the GPU's BF16 GEMM, FP8 GEMM and flash-attention efficiencies and its SM count. */
#define SYS_GEN(n, mx, fp8, vf16, vf32, hbm, cap, nvl, ib, nvs, eff, fp8_eff, attn_eff, sm)                  \
    {                                                                                                        \
        n, mx, vf16, vf32, hbm, GIB(cap), nvl, 0.7, 2.5e-6, ib, 0.7, 5e-6, nvs, 1, 2e-9, 1e-9, eff, 20e-6,   \
            fp8, fp8_eff, attn_eff, sm                                                                       \
    }

/* HBM capacity: datasheets print the binary size (an "80 GB" H100 holds 80 GiB; nvidia-smi reports
 * 81,559 MiB of it), the model counts GB of 1e9 bytes. */
#define GIB(x) ((x)*1.073741824)

/* Kernel efficiencies of the corrected model on Hopper and Blackwell (docs/model.md, "Kernel
 * efficiencies"; docs/validation.md lists the fits): the FP8 GEMM efficiency (the fraction of an
 * SM's FP8 peak one GEMM tile sustains: the GEMM time by tiles and waves, docs/model.md "GEMM
 * time") fitted per GPU generation on the NeMo / Megatron-Core FP8 runs of
 * tests/data/nemo-h100-b200-fp8-runs.csv (`stepsim validate --measured ... --calibrate`), and the
 * flash-attention efficiency that FlashAttention-3's authors measured for FlashAttention-2 on the H100: 35%
 * of the BF16 peak on the FLOPs it executes (Shah et al. 2024, arXiv 2407.08608, introduction). Blackwell
 * keeps the H100's attention figure: no published measurement of the kernels these runs used. BF16 GEMMs keep
 * the reference's 0.8. */
#define HOPPER_FP8_EFFICIENCY 0.55
#define BLACKWELL_FP8_EFFICIENCY 0.47
#define FLASH_ATTENTION_EFFICIENCY 0.35
#define BF16_EFFICIENCY 0.8
/* SMs per GPU (the corrected model's GEMM time, model/gemm.c): H100 SXM5 132, from NVIDIA's "NVIDIA
 * H100 Tensor Core GPU Architecture" whitepaper (2022), the H200 being the same GH100 part; B200 148
 * (two dies of 74 enabled SMs; Chips and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut
 * Rolling", 2025), GB200's Blackwell the same part; Blackwell Ultra (GB300) 160, from NVIDIA's
 * "Inside NVIDIA Blackwell Ultra: The Chip Powering the AI Factory Era" (technical blog, 2025). */
#define HOPPER BF16_EFFICIENCY, HOPPER_FP8_EFFICIENCY, FLASH_ATTENTION_EFFICIENCY, 132
#define BLACKWELL BF16_EFFICIENCY, BLACKWELL_FP8_EFFICIENCY, FLASH_ATTENTION_EFFICIENCY, 148
#define BLACKWELL_ULTRA BF16_EFFICIENCY, BLACKWELL_FP8_EFFICIENCY, FLASH_ATTENTION_EFFICIENCY, 160

/* The DGX A100's FLOP efficiency (for its GEMMs, the fraction of an SM's peak one tile sustains) is
 * fitted to measured runs: least squares over
 * Narayanan et al. 2021, Table 1 (`stepsim validate --measured megatron-narayanan2021-runs.csv
 * --calibrate`; docs/validation.md gives the fit and its leave-one-out error). The other presets keep
 * the reference's 0.8. */
#define DGX_A100_FLOP_EFFICIENCY 0.81
/* SMs of the A100 SXM4 (NVIDIA, "NVIDIA A100 Tensor Core GPU Architecture" whitepaper, 2020): 108.
 * The paper's A100 preset keeps none (the reference's flat rule). */
#define A100_SM_COUNT 108

static const system_preset_t system_presets[] = {
    {SYS("A100", 312, 78, 19.5, 1555, 80, 300, 0.7, 2.5e-6, 25, 0.7, 5e-6, 4),
     "A100 of arXiv 2410.00273: 312 TFLOP/s, 1555 GB/s HBM, 80 GB, NVLink 300 GB/s, IB 25 GB/s"},
    {SYS("H200", 989.4, 133.8, 66.9, 4800, 141, 450, 0.7, 2.5e-6, 50, 0.7, 5e-6, 64),
     "H200 of arXiv 2410.00273: 989.4 TFLOP/s, 4800 GB/s HBM, 141 GB, NVLink 450 GB/s, IB 50 GB/s"},
    {SYS("B200", 2500, 339, 169, 8000, 192, 900, 0.7, 2.5e-6, 100, 0.7, 5e-6, 4),
     "B200 of arXiv 2410.00273: 2500 TFLOP/s, 8000 GB/s HBM, 192 GB, NVLink 900 GB/s, IB 100 GB/s"},
    {SYS("B200-next", 3750, 508.5, 253.5, 16000, 384, 3600, 0.8, 5e-6, 200, 0.8, 1e-5, 64),
     "extrapolated future GPU of arXiv 2410.00273: 3750 TFLOP/s, 16 TB/s HBM, 384 GB, NVLink 3.6 TB/s"},
    {SYS_DS("H100", 989.4, 1978.9, 133.8, 66.9, 3350, 80, 450, 50, 8, HOPPER),
     "H100 SXM: 989.4 TFLOP/s BF16, 1978.9 FP8, 3350 GB/s HBM, 80 GB, NVLink 450 GB/s, 400 Gb/s NIC"},
    {SYS_EFF("DGX-A100", 312, 78, 19.5, 2039, GIB(80), 300, 0.7, 2.5e-6, 25, 0.7, 5e-6, 8,
             DGX_A100_FLOP_EFFICIENCY, A100_SM_COUNT),
     "DGX A100 80GB node: 8 GPUs on NVSwitch (300 GB/s), 2039 GB/s HBM, 8 x 200 Gb/s HDR NICs"},
    {SYS_DS("DGX-H100", 989.4, 1978.9, 133.8, 66.9, 3350, 80, 450, 50, 8, HOPPER),
     "DGX H100 node: 8 GPUs on NVSwitch (450 GB/s), 1978.9 TFLOP/s FP8, 8 x 400 Gb/s NDR NICs"},
    {SYS_DS("DGX-H200", 989.4, 1978.9, 133.8, 66.9, 4800, 141, 450, 50, 8, HOPPER),
     "DGX H200 node: 8 GPUs on NVSwitch (450 GB/s), 141 GB HBM3e at 4800 GB/s, 8 x 400 Gb/s NICs"},
    {SYS_DS("DGX-B200", 2250, 4500, 150, 75, 8000, 180, 900, 50, 8, BLACKWELL),
     "DGX B200 node: 2250 TFLOP/s BF16, 4500 FP8, 180 GB at 8000 GB/s, NVLink 900 GB/s, 400 Gb/s NICs"},
    {SYS_DS("GB200-NVL72", 2500, 5000, 160, 80, 8000, 186, 900, 50, 72, BLACKWELL),
     "GB200 NVL72 rack: 72 GPUs on NVLink 5 (900 GB/s), 2500 TFLOP/s BF16, 5000 FP8, 186 GB HBM3e"},
    {SYS_DS("GB300-NVL72", 2500, 5000, 160, 80, 8000, 288, 900, 100, 72, BLACKWELL_ULTRA),
     "GB300 NVL72 rack: 72 GPUs on NVLink 5 (900 GB/s), 2500 TFLOP/s BF16, 5000 FP8, 288 GB, 800 Gb/s"},
};

/* Fields: name, l, e, h, D, f, V, then the architecture (kv_heads, ffn_act, norm, position, untied).
 * TF: GPT-style (multi-head attention, GeLU, LayerNorm, learned positions, tied). LLAMA: Llama's
 * (grouped-query attention, SwiGLU, RMSNorm, rotary, untied). NEMOTRON: Nemotron's (grouped-query
 * or multi-head attention, squared ReLU, LayerNorm, rotary, untied). Sources in docs/model.md. */
#define TF(n, l, e, h, d, f, v)                                                                              \
    {                                                                                                        \
        n, l, e, h, d, f, v, 0, MODEL_FFN_GELU, MODEL_NORM_LAYERNORM, MODEL_POSITION_LEARNED, 0,             \
            MODEL_MASK_CAUSAL, {                                                                             \
            0, 0, 0, 0, 0, 0.0                                                                               \
        }                                                                                                    \
    }
#define LLAMA(n, l, e, h, kv, d, f, v)                                                                       \
    {                                                                                                        \
        n, l, e, h, d, f, v, kv, MODEL_FFN_SWIGLU, MODEL_NORM_RMSNORM, MODEL_POSITION_ROTARY, 1,             \
            MODEL_MASK_CAUSAL, {                                                                             \
            0, 0, 0, 0, 0, 0.0                                                                               \
        }                                                                                                    \
    }
/* Llama's architecture with experts: E experts of which k per token, s shared, expert hidden fe,
 * the first fd blocks dense (their feed-forward hidden size f), dropless. */
#define MOE(n, l, e, h, kv, d, f, v, E, k, s, fe, fd)                                                        \
    {                                                                                                        \
        n, l, e, h, d, f, v, kv, MODEL_FFN_SWIGLU, MODEL_NORM_RMSNORM, MODEL_POSITION_ROTARY, 1,             \
            MODEL_MASK_CAUSAL, {                                                                             \
            E, k, s, fe, fd, 0.0                                                                             \
        }                                                                                                    \
    }
#define NEMOTRON(n, l, e, h, kv, d, f, v)                                                                    \
    {                                                                                                        \
        n, l, e, h, d, f, v, kv, MODEL_FFN_RELU2, MODEL_NORM_LAYERNORM, MODEL_POSITION_ROTARY, 1,            \
            MODEL_MASK_CAUSAL, {                                                                             \
            0, 0, 0, 0, 0, 0.0                                                                               \
        }                                                                                                    \
    }

static const transformer_preset_t transformer_presets[] = {
    {TF("gpt3", 2048, 12288, 96, 96, 49152, 50257), "GPT-3 175B: l 2048, e 12288, 96 heads, 96 layers"},
    {TF("gpt3_1T", 2048, 25600, 160, 128, 102400, 51200), "GPT 1T: l 2048, e 25600, 160 heads, 128 layers"},
    {{"vit_era5",
      64800,
      12288,
      64,
      48,
      49152,
      0,
      0,
      MODEL_FFN_GELU,
      MODEL_NORM_LAYERNORM,
      MODEL_POSITION_LEARNED,
      0,
      MODEL_MASK_NONE,
      {0, 0, 0, 0, 0, 0.0}}, /* a vision transformer: every patch sees every patch */
     "ViT on ERA5: l 64800, e 12288, 64 heads, 48 layers"},
    {TF("GPT-1.7B", 2048, 2304, 24, 24, 9216, 51200), "Megatron GPT 1.7B (Narayanan 2021 Table 1)"},
    {TF("GPT-3.6B", 2048, 3072, 32, 30, 12288, 51200), "Megatron GPT 3.6B (Narayanan 2021 Table 1)"},
    {TF("GPT-7.5B", 2048, 4096, 32, 36, 16384, 51200), "Megatron GPT 7.5B (Narayanan 2021 Table 1)"},
    {TF("GPT-18B", 2048, 6144, 48, 40, 24576, 51200), "Megatron GPT 18B (Narayanan 2021 Table 1)"},
    {TF("GPT-39B", 2048, 8192, 64, 48, 32768, 51200), "Megatron GPT 39B (Narayanan 2021 Table 1)"},
    {TF("GPT-76B", 2048, 10240, 80, 60, 40960, 51200), "Megatron GPT 76B (Narayanan 2021 Table 1)"},
    {TF("GPT-145B", 2048, 12288, 96, 80, 49152, 51200), "Megatron GPT 145B (Narayanan 2021 Table 1)"},
    {TF("GPT-310B", 2048, 16384, 128, 96, 65536, 51200), "Megatron GPT 310B (Narayanan 2021 Table 1)"},
    {TF("GPT-530B", 2048, 20480, 128, 105, 81920, 51200), "Megatron GPT 530B (Narayanan 2021 Table 1)"},
    {TF("GPT-1T", 2048, 25600, 160, 128, 102400, 51200), "Megatron GPT 1T (Narayanan 2021 Table 1)"},
    {TF("GPT3-5B", 2048, 4096, 32, 24, 16384, 50257), "NeMo GPT-3 5B: l 2048, e 4096, 32 heads, 24 layers"},
    {TF("GPT3-20B", 2048, 6144, 48, 44, 24576, 50257), "NeMo GPT-3 20B: l 2048, e 6144, 48 heads, 44 layers"},
    {TF("GPT3-175B", 2048, 12288, 96, 96, 49152, 50257),
     "NeMo GPT-3 175B: l 2048, e 12288, 96 heads, 96 layers"},
    {LLAMA("Llama2-7B", 4096, 4096, 32, 32, 32, 11008, 32000),
     "Llama 2 7B: l 4096, e 4096, 32 heads, 32 layers, SwiGLU f 11008, RMSNorm, rotary, untied"},
    {LLAMA("Llama2-13B", 4096, 5120, 40, 40, 40, 13824, 32000),
     "Llama 2 13B: l 4096, e 5120, 40 heads, 40 layers, SwiGLU f 13824, RMSNorm, rotary, untied"},
    {LLAMA("Llama2-70B", 4096, 8192, 64, 8, 80, 28672, 32000),
     "Llama 2 70B: l 4096, e 8192, 64 heads (8 K/V), 80 layers, SwiGLU f 28672"},
    {LLAMA("Llama3-8B", 8192, 4096, 32, 8, 32, 14336, 128256),
     "Llama 3 8B: l 8192, e 4096, 32 heads (8 K/V), 32 layers, SwiGLU f 14336, V 128256"},
    {LLAMA("Llama3-70B", 8192, 8192, 64, 8, 80, 28672, 128256),
     "Llama 3 70B: l 8192, e 8192, 64 heads (8 K/V), 80 layers, SwiGLU f 28672, V 128256"},
    {LLAMA("Llama3.1-405B", 8192, 16384, 128, 8, 126, 53248, 128256),
     "Llama 3.1 405B: l 8192, e 16384, 128 heads (8 K/V), 126 layers, SwiGLU f 53248"},
    {NEMOTRON("Nemotron-8B", 4096, 4096, 32, 32, 32, 16384, 256000),
     "NeMo Nemotron 8B: l 4096, e 4096, 32 heads, 32 layers, squared ReLU, rotary, untied"},
    {NEMOTRON("Nemotron-22B", 4096, 6144, 48, 48, 40, 24576, 256000),
     "NeMo Nemotron 22B: l 4096, e 6144, 48 heads, 40 layers, squared ReLU, rotary, untied"},
    {NEMOTRON("Nemotron4-15B", 4096, 6144, 48, 8, 32, 24576, 256000),
     "Nemotron-4 15B: l 4096, e 6144, 48 heads (8 K/V), 32 layers, squared ReLU, V 256000"},
    {NEMOTRON("Nemotron4-340B", 4096, 18432, 96, 8, 96, 73728, 256000),
     "Nemotron-4 340B: l 4096, e 18432, 96 heads (8 K/V), 96 layers, squared ReLU, V 256000"},
    {MOE("Mixtral-8x7B", 32768, 4096, 32, 8, 32, 14336, 32000, 8, 2, 0, 14336, 0),
     "Mixtral 8x7B: l 32768, e 4096, 32 heads (8 K/V), 32 layers, 8 experts (top 2) of SwiGLU f 14336"},
    {MOE("Mixtral-8x22B", 65536, 6144, 48, 8, 56, 16384, 32000, 8, 2, 0, 16384, 0),
     "Mixtral 8x22B: l 65536, e 6144, 48 heads (8 K/V), 56 layers, 8 experts (top 2) of SwiGLU f 16384"},
    {MOE("DeepSeek-V3-like", 4096, 7168, 128, 128, 61, 18432, 129280, 256, 8, 1, 2048, 3),
     "DeepSeek-V3-like: l 4096, e 7168, 61 layers (3 dense, f 18432), 256 experts (top 8) + 1 shared of "
     "f 2048; multi-head attention, 128 heads, stands for MLA"},
};

#define N_SYSTEMS (sizeof system_presets / sizeof system_presets[0])
#define N_TRANSFORMERS (sizeof transformer_presets / sizeof transformer_presets[0])

static const system_preset_t *find_system(const char *name) {
    for (size_t i = 0; name && i < N_SYSTEMS; i++)
        if (strcmp(system_presets[i].sys.name, name) == 0)
            return &system_presets[i];
    return NULL;
}

static const transformer_preset_t *find_transformer(const char *name) {
    for (size_t i = 0; name && i < N_TRANSFORMERS; i++)
        if (strcmp(transformer_presets[i].tf.name, name) == 0)
            return &transformer_presets[i];
    return NULL;
}

int model_system_preset(const char *name, model_system_t *out) {
    const system_preset_t *p = find_system(name);
    if (!p)
        return MODEL_EINVAL;
    *out = p->sys;
    return MODEL_OK;
}

int model_transformer_preset(const char *name, model_transformer_t *out) {
    const transformer_preset_t *p = find_transformer(name);
    if (!p)
        return MODEL_EINVAL;
    *out = p->tf;
    return MODEL_OK;
}

const char *model_system_preset_name(size_t index) {
    return index < N_SYSTEMS ? system_presets[index].sys.name : NULL;
}

const char *model_transformer_preset_name(size_t index) {
    return index < N_TRANSFORMERS ? transformer_presets[index].tf.name : NULL;
}

int64_t model_system_preset_domain(const char *name) {
    static const char *const own_domain[] = {"H100",     "DGX-H100",    "DGX-H200",
                                             "DGX-B200", "GB200-NVL72", "GB300-NVL72"};
    const system_preset_t *p = find_system(name);
    for (size_t i = 0; p && i < sizeof own_domain / sizeof own_domain[0]; i++)
        if (strcmp(own_domain[i], name) == 0)
            return p->sys.nvlink_size;
    return 0;
}

const char *model_system_preset_summary(const char *name) {
    const system_preset_t *p = find_system(name);
    return p ? p->summary : NULL;
}

const char *model_transformer_preset_summary(const char *name) {
    const transformer_preset_t *p = find_transformer(name);
    return p ? p->summary : NULL;
}

static const char *const strategy_names[MODEL_STRATEGY_COUNT] = {"1d", "2d", "2d-seqp"};

const char *model_strategy_name(model_strategy_t s) {
    return (unsigned)s < MODEL_STRATEGY_COUNT ? strategy_names[s] : "?";
}

int model_strategy_parse(const char *name, model_strategy_t *out) {
    for (int i = 0; name && i < MODEL_STRATEGY_COUNT; i++) {
        if (strcmp(name, strategy_names[i]) == 0) {
            *out = (model_strategy_t)i;
            return MODEL_OK;
        }
    }
    return MODEL_EINVAL;
}

const char *model_compat_name(model_compat_t c) {
    return c == MODEL_COMPAT_REFERENCE ? "reference" : "corrected";
}

int model_compat_parse(const char *name, model_compat_t *out) {
    if (name && strcmp(name, "reference") == 0)
        *out = MODEL_COMPAT_REFERENCE;
    else if (name && strcmp(name, "corrected") == 0)
        *out = MODEL_COMPAT_CORRECTED;
    else
        return MODEL_EINVAL;
    return MODEL_OK;
}

/* Name tables of the training enums, indexed by value. */
static const char *const recompute_names[] = {"none", "selective", "full"};
static const char *const attention_names[] = {"flash", "materialized"};
static const char *const dp_comm_names[] = {"sharded", "allreduce", "allreduce-overlap", "sharded-overlap",
                                            "fsdp"};

static int parse_name(const char *name, const char *const *names, int n, int *out) {
    for (int i = 0; name && i < n; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return MODEL_OK;
        }
    }
    return MODEL_EINVAL;
}

const char *model_recompute_name(model_recompute_t r) {
    return (unsigned)r < 3 ? recompute_names[r] : "?";
}

int model_recompute_parse(const char *name, model_recompute_t *out) {
    int v = 0;
    if (parse_name(name, recompute_names, 3, &v))
        return MODEL_EINVAL;
    *out = (model_recompute_t)v;
    return MODEL_OK;
}

const char *model_attention_name(model_attention_t a) {
    return (unsigned)a < 2 ? attention_names[a] : "?";
}

int model_attention_parse(const char *name, model_attention_t *out) {
    int v = 0;
    if (parse_name(name, attention_names, 2, &v))
        return MODEL_EINVAL;
    *out = (model_attention_t)v;
    return MODEL_OK;
}

const char *model_dp_comm_name(model_dp_comm_t d) {
    return (unsigned)d < 5 ? dp_comm_names[d] : "?";
}

int model_dp_comm_parse(const char *name, model_dp_comm_t *out) {
    int v = 0;
    if (parse_name(name, dp_comm_names, 5, &v))
        return MODEL_EINVAL;
    *out = (model_dp_comm_t)v;
    return MODEL_OK;
}

static const char *const grad_accum_names[] = {"fused", "add"};
static const char *const precision_names[] = {"bf16", "fp8"};

const char *model_precision_name(model_precision_t p) {
    return (unsigned)p < 2 ? precision_names[p] : "?";
}

int model_precision_parse(const char *name, model_precision_t *out) {
    int v = 0;
    if (parse_name(name, precision_names, 2, &v))
        return MODEL_EINVAL;
    *out = (model_precision_t)v;
    return MODEL_OK;
}

const char *model_grad_accum_name(model_grad_accum_t g) {
    return (unsigned)g < 2 ? grad_accum_names[g] : "?";
}

int model_grad_accum_parse(const char *name, model_grad_accum_t *out) {
    int v = 0;
    if (parse_name(name, grad_accum_names, 2, &v))
        return MODEL_EINVAL;
    *out = (model_grad_accum_t)v;
    return MODEL_OK;
}
