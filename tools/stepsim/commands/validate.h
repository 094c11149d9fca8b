/* validate.h - the result of `stepsim validate --measured`: computed by commands/cmd_validate.c,
 * printed by output/print_validate.c (print.h). */
#ifndef STEPSIM_VALIDATE_H
#define STEPSIM_VALIDATE_H

#include <stddef.h>

#include "model.h"

/* The run's numeric precision (fp16 and bf16 are modelled alike: 2-byte elements, the dense 16-bit
 * tensor rate). */
typedef enum run_precision {
    RUN_PRECISION_FP16 = 0,
    RUN_PRECISION_BF16 = 1,
    RUN_PRECISION_FP8 = 2
} run_precision_t;

/* The feed-forward activation, norm and positions of the run's architecture. */
/* The architecture enums take model.h's values (model_ffn_act_t, model_norm_t, model_position_t). */
typedef enum run_ffn_act {
    RUN_FFN_GELU = MODEL_FFN_GELU,
    RUN_FFN_SWIGLU = MODEL_FFN_SWIGLU,
    RUN_FFN_RELU2 = MODEL_FFN_RELU2
} run_ffn_act_t;
typedef enum run_norm {
    RUN_NORM_LAYERNORM = MODEL_NORM_LAYERNORM,
    RUN_NORM_RMSNORM = MODEL_NORM_RMSNORM
} run_norm_t;
typedef enum run_position {
    RUN_POSITION_LEARNED = MODEL_POSITION_LEARNED,
    RUN_POSITION_ROTARY = MODEL_POSITION_ROTARY
} run_position_t;

/* What a row says beyond the job's fields, typed and checked as read, or filled by the defaults of
 * the software generation of the run's GPU (docs/validation.md, "GPU generation"). Each value the
 * model does not honour yet is named in the row's not_modelled list. */
typedef struct run_settings {
    run_precision_t precision;
    int64_t kv_heads; /* the row's heads when empty */
    run_ffn_act_t ffn_act;
    run_norm_t norm;
    run_position_t position;
    int untied_embeddings;
    int fsdp;                  /* Megatron-FSDP / ZeRO-3 */
    int tp_comm_overlap;       /* as set; it acts only with tp > 1 */
    int distributed_optimizer; /* optimizer states sharded over dp */
    int overlap_grad_reduce, overlap_param_gather;
    int64_t ep;                           /* 1: dense */
    int64_t ga;                           /* microbatches per iteration and replica: gbs / (dp mbs) */
    double measured_tokens_per_s_per_gpu; /* 0: the row gives measured_iteration_s */
    int fp8_param_gather; /* the distributed optimizer all-gathers FP8 parameters (acts with fp8) */
} run_settings_t;

#define RUN_MAX_NOT_MODELLED 12

/* One measured run and its predictions. */
typedef struct run_row {
    char name[64];
    model_job_t job; /* the corrected job as predicted */
    char system[32];
    double measured_s;
    int64_t cp;
    int mbs_recorded, interleave_recorded, attention_recorded, dp_comm_recorded, grad_accum_recorded;
    int gbs_recorded; /* 0: gbs = dp x mbs x ga by the rule of an empty gbs */
    run_settings_t set;
    char not_modelled[RUN_MAX_NOT_MODELLED][32]; /* what the prediction leaves out, e.g. "fp8" */
    int n_not_modelled;
    model_summary_t pred, ref;
    double error_pct, ref_error_pct;
    /* --sim: the simulation with analytic communication and with the network (0: not simulated) */
    double sim_analytic_s, sim_network_s, sim_analytic_error_pct, sim_network_error_pct;
    double sim_unmodeled_s; /* the analytic cost added for what the simulation does not model */
    char sim_topology[64];
    char sim_error[200]; /* why a row was not simulated ("" if it was) */
    double sim_wall_s;
} run_row_t;

/* The analytic model's and the reference's errors over every row. */
typedef struct summary_stats {
    double mean_abs, max_abs, ref_mean_abs, ref_max_abs;
} summary_stats_t;

/* --sim: the errors over the rows simulated. */
typedef struct sim_stats {
    size_t simulated;
    double mean_abs[3], max_abs[3]; /* analytic, simulation analytic comm, simulation network */
} sim_stats_t;

/* --calibrate: one system's FLOP-efficiency fit; names[i] is run i's name (rows' storage). */
typedef struct validate_calib {
    const char *system;
    model_calibration_t fit;
    const char **names;
    int fitted; /* fit holds a result (model_calibrate_destroy) */
} validate_calib_t;

typedef struct validate_result {
    const char *file;                     /* the measured CSV */
    const char *source, *source_describe; /* the prediction source ("analytic") and its one line */
    int unrecorded_search;                /* --unrecorded search (else fixed) */
    const run_row_t *rows;
    size_t n;
    summary_stats_t stats;
    int sim; /* --sim: sim_stats and the rows' sim_* fields are filled */
    sim_stats_t sim_stats;
    int calibrate; /* --calibrate: one fit per system, in the order of each system's first row */
    validate_calib_t *calib;
    size_t n_calib;
} validate_result_t;

#endif
