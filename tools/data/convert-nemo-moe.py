#!/usr/bin/env python3
"""convert-nemo-moe.py - NVIDIA's published NeMo pretraining throughput of mixture-of-experts models
(one row per run, tests/data/nemo-moe.csv) in the measured-runs schema of `stepsim validate
--measured` (docs/cli.md, "validate --measured input"; docs/validation.md, "Mixture-of-experts runs").

Usage: tools/data/convert-nemo-moe.py SOURCE.csv > RUNS.csv

What it writes, per source row (tests/data/README.md says the same in prose):
- the model's architecture, experts included, from the public configuration of its family (ARCH);
- the layout as published (gpus, tp, pp, cp, interleave = vp, ep, gbs, mbs, ga; dp = gpus / (tp pp cp));
- precision fp8 as published (the model predicts what it can of it; validate names the rest);
- measured_tokens_per_s_per_gpu as published, after checking that the published model TFLOP/s per
  GPU is that throughput times NVIDIA's model FLOPs per token (flops_per_token, within 0.5%);
- every software setting the source does not state left empty (validate fills it by the GPU
  generation's defaults); no capacity factor (NeMo's MoE recipes are dropless).
The output is deterministic; the test stepsim.convert_nemo_moe compares it byte for byte.
"""
import csv
import sys

# family -> hidden, heads, kv_heads, layers, ffn_hidden, vocab, ffn_act, norm, position, untied,
#           experts, topk, shared_experts, expert_ffn_hidden, attention FLOPs per token per layer
#           per (s h) in NVIDIA's count (12: the full square; 6: the causal half)
ARCH = {
    # Mixtral 8x7B: NeMo's MixtralConfig8x7B (nemo/collections/llm/gpt/model/mixtral.py) and
    # mistralai's config.json: GQA 32/8, SwiGLU, RMSNorm, rotary, untied, 8 experts top 2.
    "Mixtral-8x7B": (4096, 32, 8, 32, 14336, 32000, "swiglu", "rmsnorm", "rotary", 1, 8, 2, 0, 14336, 12),
    # Llama 4 Scout (16 experts): NeMo's Llama4Experts16Config (nemo/collections/llm/gpt/model/llama.py):
    # 48 layers, every one MoE, 16 experts top 1 plus one shared expert, both of hidden 8192,
    # vocab 25256 x 8; chunked attention of 8192 tokens, which at sequence 8192 is the whole sequence.
    "LLAMA4-Scout-LLM": (5120, 40, 8, 48, 16384, 202048, "swiglu", "rmsnorm", "rotary", 1, 16, 1, 1, 8192, 6),
}

SYSTEM = {"DGX-B200": "DGX-B200", "DGX-GB200": "GB200-NVL72", "DGX-H100": "DGX-H100"}
SHORT = {"DGX-B200": "b200", "GB200-NVL72": "gb200", "DGX-H100": "h100"}
PRECISION = {"FP8": "fp8", "BF16": "bf16"}

HEADER = [
    "name", "hidden", "heads", "kv_heads", "layers", "seq_len", "vocab", "ffn_hidden", "ffn_act",
    "norm", "position", "untied_embeddings", "experts", "topk", "shared_experts", "expert_ffn_hidden",
    "gpus", "tp", "pp", "dp", "cp", "ep", "gbs", "mbs", "ga", "interleave", "precision", "system",
    "measured_tokens_per_s_per_gpu", "measured_model_tflops_per_gpu", "source",
]


def flops_per_token(arch, seq_len):
    """NVIDIA's model FLOPs per trained token (forward and backward, no recomputation): 6 x the
    GEMM parameters a token meets (Q, K, V and output projections; the router; topk routed and the
    shared experts; the output layer), plus the attention scores and values, att L s h."""
    h, a, g, layers, f, v, act, _, _, _, e, k, s, fe, att = arch
    attn_proj = 2.0 * h * h * (1.0 + g / a)
    mult = 3.0 if act == "swiglu" else 2.0
    moe = mult * h * fe * (k + s) + h * e
    return 6.0 * (layers * (attn_proj + moe) + h * v) + att * layers * seq_len * h


def fail(row, what):
    sys.exit("convert-nemo-moe: row %d: %s" % (row, what))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: convert-nemo-moe.py SOURCE.csv > RUNS.csv")
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
        tokens, tflops = r["tokens_per_s_per_gpu"], r["model_tflops_per_gpu"]
        ratio = float(tflops) * 1e12 / float(tokens) / flops_per_token(arch, seq)
        if abs(ratio - 1.0) > 0.005:
            fail(i, "model TFLOP/s / tokens/s is %.4f x the FLOP count" % ratio)
        system = SYSTEM[r["system"]]
        release = r["container"].replace("NeMo ", "nemo").replace(".", "")
        name = "%s-%s-%dk-%d-%s" % (model, SHORT[system], seq // 1024, gpus, release)
        h, a, g, layers, ffn, vocab, act, norm, pos, untied, e, k, s, fe, _ = arch
        out.writerow([
            name, h, a, g, layers, seq, vocab, ffn, act, norm, pos, untied, e, k, s, fe, gpus, tp, pp,
            dp, r["cp"], r["ep"], r["gbs"], r["mbs"], r["ga"], r["vp"], PRECISION[r["precision"]],
            system, tokens, tflops, r["source"],
        ])


if __name__ == "__main__":
    main()
