#!/usr/bin/env python3
"""convert-nemo.py - NVIDIA's published NeMo / Megatron-Core pretraining throughput (one row per run,
tests/data/nemo-h100-b200-fp8.csv) in the measured-runs schema of `stepsim validate --measured`
(docs/cli.md, "validate --measured input"; docs/validation.md).

Usage: tools/data/convert-nemo.py SOURCE.csv > RUNS.csv

What it writes, per source row (tests/data/README.md says the same in prose):
- the model's architecture from the public configuration of its family (the table ARCH below);
- the layout as published (gpus, tp, pp, cp, interleave = vp, ep, ga; dp = gpus / (tp pp cp));
- gbs and mbs as published; the long-sequence page of NeMo 24.03.01 states neither, and there gbs is
  taken as 4,194,304 tokens per batch (gbs = 4M / seq_len), the batch that the page's later edition
  (NeMo 25.04, its DGX B200 table of the same sweep over sequence lengths) states for every row, and
  the source column says so; mbs stays empty (validate's --unrecorded rule fills it);
- precision fp8 (NVIDIA's "FP8" and "FP8 hybrid" are both Transformer Engine's hybrid recipe);
- measured_tokens_per_s_per_gpu as published; where the source gives only model TFLOP/s per GPU,
  it is that figure divided by NVIDIA's model FLOPs per token (flops_per_token below), which the
  script first checks against every row that states both (within 2%);
- every software setting the source does not state (recompute, sequence parallelism, the
  distributed optimizer and its overlaps, tensor-parallel communication overlap) left empty, so
  that validate fills it by the GPU generation's defaults (docs/validation.md).
The output is deterministic; tests compare it byte for byte with the committed file.
"""
import csv
import sys

# family -> hidden, heads, kv_heads, layers, ffn_hidden, vocab, ffn_act, norm, position, untied
ARCH = {
    # GPT-3 (Brown et al. 2020, Table 2.1) as NeMo configures it: GeLU, LayerNorm, learned
    # positions, tied embeddings, the GPT-2 BPE vocabulary.
    "GPT3-5B": (4096, 32, 32, 24, 16384, 50257, "gelu", "layernorm", "learned", 0),
    "GPT3-20B": (6144, 48, 48, 44, 24576, 50257, "gelu", "layernorm", "learned", 0),
    "GPT3-175B": (12288, 96, 96, 96, 49152, 50257, "gelu", "layernorm", "learned", 0),
    # Llama 2 (Touvron et al. 2023) and Llama 3 / 3.1 (Meta's config.json files): SwiGLU, RMSNorm,
    # rotary positions, untied output layer.
    "LLAMA2-7B": (4096, 32, 32, 32, 11008, 32000, "swiglu", "rmsnorm", "rotary", 1),
    "LLAMA2-13B": (5120, 40, 40, 40, 13824, 32000, "swiglu", "rmsnorm", "rotary", 1),
    "LLAMA2-70B": (8192, 64, 8, 80, 28672, 32000, "swiglu", "rmsnorm", "rotary", 1),
    "LLAMA3-8B": (4096, 32, 8, 32, 14336, 128256, "swiglu", "rmsnorm", "rotary", 1),
    "LLAMA3-70B": (8192, 64, 8, 80, 28672, 128256, "swiglu", "rmsnorm", "rotary", 1),
    "LLAMA3-405B": (16384, 128, 8, 126, 53248, 128256, "swiglu", "rmsnorm", "rotary", 1),
    # Nemotron-3 8B, Nemotron 22B, Nemotron-4 15B and 340B (NeMo's configurations; Nemotron-4
    # technical reports): squared ReLU (not gated), LayerNorm, rotary positions, untied, 256k vocab.
    "Nemotron-8B": (4096, 32, 32, 32, 16384, 256000, "relu2", "layernorm", "rotary", 1),
    "Nemotron-15B": (6144, 48, 8, 32, 24576, 256000, "relu2", "layernorm", "rotary", 1),
    "Nemotron-22B": (6144, 48, 48, 40, 24576, 256000, "relu2", "layernorm", "rotary", 1),
    "Nemotron-340B": (18432, 96, 8, 96, 73728, 256000, "relu2", "layernorm", "rotary", 1),
}

SYSTEM = {"DGX-H100": "DGX-H100", "H100": "DGX-H100", "DGX-B200": "DGX-B200"}
# container -> the name's suffix and the source column
RELEASE = {
    "NeMo 24.07": ("nemo2407", "NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo 24.07)"),
    "NeMo 24.03.01": ("nemo2403", "NVIDIA/NeMo docs/source/performance/performance_long_sequence.md "
                      "(NeMo 24.03.01)"),
    "(not stated; H100 per script name)": ("mlm", "NVIDIA/Megatron-LM examples/llama/README.md (FP8 "
                                           "performance)"),
    "NeMo 25.02": ("nemo2502", "NVIDIA NeMo Framework user guide, performance summary (NeMo 25.02)"),
}
PRECISION = {"FP8": "fp8", "FP8 hybrid": "fp8"}
# Tokens per global batch of NVIDIA's long-sequence sweeps (stated in the NeMo 25.04 edition of
# performance_long_sequence.md for every sequence length: 8K x 512, ..., 1024K x 4).
LONG_SEQUENCE_BATCH_TOKENS = 4194304

HEADER = [
    "name", "hidden", "heads", "kv_heads", "layers", "seq_len", "vocab", "ffn_hidden", "ffn_act",
    "norm", "position", "untied_embeddings", "gpus", "tp", "pp", "dp", "cp", "ep", "gbs", "mbs", "ga",
    "interleave", "precision", "system", "measured_tokens_per_s_per_gpu", "measured_model_tflops_per_gpu",
    "source",
]


def flops_per_token(arch, seq_len):
    """NVIDIA's model FLOPs per trained token (forward and backward, no recomputation): 6 x the
    block and output-layer GEMM parameters, plus the attention scores and values, 12 L s h (full,
    not causal-halved)."""
    h, a, g, layers, f, v, act = arch[:7]
    attn_proj = 2.0 * h * h * (1.0 + g / a)  # Q and output; K and V with g of a heads
    mlp = (3.0 if act == "swiglu" else 2.0) * h * f
    return 6.0 * (layers * (attn_proj + mlp) + h * v) + 12.0 * layers * seq_len * h


def fail(row, what):
    sys.exit("convert-nemo: row %d: %s" % (row, what))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: convert-nemo.py SOURCE.csv > RUNS.csv")
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(HEADER)
    for i, r in enumerate(rows, 1):
        model = r["model"]
        if model not in ARCH:
            fail(i, "model %r has no architecture in ARCH" % model)
        arch = ARCH[model]
        seq = int(r["seq_len"])
        gpus, tp, pp, cp = (int(r[k] or 1) for k in ("gpus", "tp", "pp", "cp"))
        if gpus % (tp * pp * cp):
            fail(i, "gpus %d is not a multiple of tp x pp x cp" % gpus)
        dp = gpus // (tp * pp * cp)
        tflops = r["model_tflops_per_gpu"]
        tokens = r["tokens_per_s_per_gpu"]
        fpt = flops_per_token(arch, seq)
        if tokens and tflops:
            ratio = float(tflops) * 1e12 / float(tokens) / fpt
            if abs(ratio - 1.0) > 0.02:
                fail(i, "model TFLOP/s / tokens/s is %.4f x the FLOP count" % ratio)
        elif tflops:
            tokens = "%.1f" % (float(tflops) * 1e12 / fpt)
        else:
            fail(i, "neither tokens/s nor model TFLOP/s")
        release, source = RELEASE[r["container"]]
        gbs = r["gbs"]
        if not gbs and r["container"] == "NeMo 24.03.01":
            gbs = str(LONG_SEQUENCE_BATCH_TOKENS // seq)
            source += "; gbs assumed: %d tokens per batch" % LONG_SEQUENCE_BATCH_TOKENS
        name = "%s-%s-%dk-%d-%s" % (model, SYSTEM[r["system"]][4:].lower(), seq // 1024, gpus, release)
        h, a, g, layers, ffn, vocab, act, norm, pos, untied = arch
        out.writerow([
            name, h, a, g, layers, seq, vocab, ffn, act, norm, pos, untied, gpus, tp, pp, dp,
            r["cp"], r["ep"], gbs, r["mbs"], r["ga"], r["vp"], PRECISION[r["precision"]],
            SYSTEM[r["system"]], tokens, tflops, source,
        ])


if __name__ == "__main__":
    main()
