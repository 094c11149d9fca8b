/* print_run.c - what `stepsim run` prints: its --json object and its text, and the scenario object
 * written into a trace's metadata. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "alloc.h"
#include "output.h"
#include "print.h"

static char *scenario_text_cjson(const model_summary_t *su, const model_job_t *job, const scenario_t *scn,
                                 const step_config_t *c) {
    json_writer_t w;
    char buf[64];
    json_start(&w, NULL);
    output_config_json(&w, su, job, scn);
    json_string(&w, "comm", c->comm == SIM_COMM_ANALYTIC ? "analytic" : "network");
    json_string(&w, "schedule", step_schedule_name(c->schedule));
    json_int(&w, "virtual_stages", c->schedule == STEP_SCHEDULE_INTERLEAVED ? c->virtual_stages : 1);
    json_string(&w, "placement", step_placement_format(&c->placement, buf, sizeof buf));
    cJSON *doc = json_take(&w);
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    return text;
}

char *print_run_trace_scenario(const model_summary_t *su, const model_job_t *job, const scenario_t *scn,
                               const step_config_t *c) {
    char *text = scenario_text_cjson(su, job, scn, c);
    char *copy = text ? alloc_malloc(strlen(text) + 1) : NULL;
    if (copy)
        memcpy(copy, text, strlen(text) + 1);
    cJSON_free(text);
    return copy;
}

char *print_run_trace_workload(const char *path, int32_t ranks, int64_t nodes, const char *compute,
                               const model_job_t *job, const step_config_t *c) {
    json_writer_t w;
    json_start(&w, NULL);
    json_string(&w, "workload", path);
    json_int(&w, "ranks", ranks);
    json_int(&w, "nodes", nodes);
    json_string(&w, "compute", compute);
    json_string(&w, "system", job->system.name);
    json_string(&w, "comm", c->comm == SIM_COMM_ANALYTIC ? "analytic" : "network");
    cJSON *doc = json_take(&w);
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    char *copy = text ? alloc_malloc(strlen(text) + 1) : NULL;
    if (copy)
        memcpy(copy, text, strlen(text) + 1);
    cJSON_free(text);
    return copy;
}

/* ---- the result -----------------------------------------------------------------------------------------
 */

static const char *level_name(step_collapsed_t l) {
    return l == STEP_STAGES ? "stages" : l == STEP_RAILS ? "tensor ranks" : "none";
}

/* The what-if: the perturbations, the baseline and the costs (only when there are perturbations). */
static void what_if_json(json_writer_t *w, const run_result_t *r, const scenario_t *scn,
                         const run_opts_t *o) {
    const double base = r->baseline ? r->baseline->res.step_time_s : 0.0;
    json_open_object(w, "perturbations");
    json_int(w, "seed", (int64_t)r->seed);
    json_int(w, "slowed_gpus", r->slowed_gpus);
    json_string(w, "slowed_list", r->slowed_list ? r->slowed_list : "");
    if (scn->perturb.jitter.given) {
        json_open_object(w, "jitter");
        json_string(w, "distribution", step_jitter_name(scn->perturb.jitter.dist));
        json_number(w, "cv", scn->perturb.jitter.cv);
        json_close_object(w);
    }
    if (r->baseline) {
        json_open_array(w, "entries");
        for (int k = 0; k < r->n_entries; k++) {
            json_open_object(w, NULL);
            json_string(w, "entry", r->entry[k].label);
            if (r->entry_costs) {
                json_number(w, "step_time_s", r->entry[k].step_s);
                json_number(w, "cost_s", r->entry[k].cost_s);
                json_number(w, "cost_percent", base > 0 ? 100.0 * r->entry[k].cost_s / base : 0.0);
            }
            json_close_object(w);
        }
        json_close_array(w);
        if (!r->entry_costs)
            json_string(w, "entry_costs_note", r->entry_costs_note);
    }
    json_close_object(w);
    if (!r->baseline)
        return;
    const step_result_t *b = &r->baseline->res;
    json_open_object(w, "baseline");
    json_number(w, "step_time_s", b->step_time_s);
    json_int(w, "critical_gpu", b->critical_gpu);
    json_int(w, "critical_stage", b->critical_stage);
    json_int(w, "simulated_gpus", b->simulated_gpus);
    json_string(w, "collapse_note", b->collapse_note);
    if (!o->deterministic)
        json_number(w, "wall_time_s", r->baseline->wall_s);
    json_close_object(w);
    json_number(w, "what_if_cost_s", run_cost_s(r));
    json_number(w, "what_if_cost_percent", run_cost_percent(r));
}

static void what_if_text(FILE *out, const run_result_t *r, const scenario_t *scn) {
    char what[400];
    scn_perturb_describe(&scn->perturb, what, sizeof what);
    fprintf(out, "\n  what-if (seed %" PRIu64 "): %s\n", r->seed, what);
    if (r->slowed_gpus > 0) {
        fprintf(out, "    %" PRId64 " GPU%s slowed", r->slowed_gpus, r->slowed_gpus == 1 ? "" : "s");
        if (r->slowed_list && r->slowed_list[0] && strlen(r->slowed_list) <= 60)
            fprintf(out, ": %s", r->slowed_list);
        fprintf(out, "\n");
    }
    if (!r->baseline) {
        fprintf(out, "    (no baseline: --baseline off)\n");
        return;
    }
    const step_result_t *b = &r->baseline->res;
    char line[512];
    snprintf(line, sizeof line,
             "  %-34s %.6f s (GPU %d, stage %d the last to finish; %d of %d GPUs simulated)",
             "baseline (without perturbations)", b->step_time_s, b->critical_gpu, b->critical_stage,
             b->simulated_gpus, b->gpus);
    output_wrapped(out, 37, line);
    fprintf(out, "  %-34s %+.6f s (%+.3f%%)\n", "cost of the what-if", run_cost_s(r), run_cost_percent(r));
    if (r->n_entries > 1 || !r->entry_costs) {
        snprintf(line, sizeof line, "    each entry alone:%s%s", r->entry_costs ? "" : " ",
                 r->entry_costs ? "" : r->entry_costs_note);
        output_wrapped(out, 6, line);
        for (int k = 0; k < r->n_entries && r->entry_costs; k++)
            fprintf(out, "    %-32s %+.6f s (%+.3f%%)\n", r->entry[k].label, r->entry[k].cost_s,
                    b->step_time_s > 0 ? 100.0 * r->entry[k].cost_s / b->step_time_s : 0.0);
    }
}

/* --layers: one block as simulated, row by row, beside the model's per-layer times. */
static void view_text(FILE *out, const step_block_view_t *v) {
    static const char *const PASS[2] = {"fwd", "bwd"};
    fprintf(out,
            "\n  one block as simulated (GPU %d, block %d, microbatch 0; analytic: the per-layer table)\n",
            v->gpu, v->block);
    fprintf(out, "  %-4s %-24s %12s %12s %12s %12s %12s\n", "pass", "layers", "compute (s)", "comm (s)",
            "exposed (s)", "time (s)", "analytic (s)");
    for (int i = 0; i < v->n; i++) {
        const step_view_row_t *r = &v->row[i];
        char layers[64];
        if (r->layer0 == r->layer1)
            snprintf(layers, sizeof layers, "%s", r->first_layer);
        else
            snprintf(layers, sizeof layers, "%s..%s", r->first_layer, r->last_layer);
        fprintf(out, "  %-4s %-24.24s %12.6g %12.6g %12.6g %12.6g %12.6g\n", PASS[r->pass], layers,
                r->compute_s, r->comm_s, r->exposed_comm_s, r->compute_s + r->exposed_comm_s, r->analytic_s);
    }
    for (int p = 0; p < 2; p++)
        fprintf(out, "  %-4s %-24s %12s %12s %12s %12.6g %12.6g\n", PASS[p], "block", "", "", "",
                v->total_s[p], v->analytic_total_s[p]);
}

static void view_json(json_writer_t *w, const step_block_view_t *v) {
    json_open_object(w, "layers");
    json_int(w, "gpu", v->gpu);
    json_int(w, "block", v->block);
    json_int(w, "microbatch", 0);
    json_open_array(w, "rows");
    for (int i = 0; i < v->n; i++) {
        const step_view_row_t *r = &v->row[i];
        json_open_object(w, NULL);
        json_string(w, "pass", r->pass ? "bwd" : "fwd");
        json_string(w, "first_layer", r->first_layer);
        json_string(w, "last_layer", r->last_layer);
        json_number(w, "compute_s", r->compute_s);
        json_number(w, "comm_s", r->comm_s);
        json_number(w, "exposed_comm_s", r->exposed_comm_s);
        json_number(w, "time_s", r->compute_s + r->exposed_comm_s);
        json_number(w, "analytic_time_s", r->analytic_s);
        json_close_object(w);
    }
    json_close_array(w);
    json_number(w, "fwd_time_s", v->total_s[0]);
    json_number(w, "bwd_time_s", v->total_s[1]);
    json_number(w, "analytic_fwd_time_s", v->analytic_total_s[0]);
    json_number(w, "analytic_bwd_time_s", v->analytic_total_s[1]);
    json_close_object(w);
}

/* Whether sends do not hold up the sender: --p2p async, or training.pp_comm_overlap on the interleaved
 * schedule (the simulated step turns it on there). */
static const char *sends_name(const run_result_t *r, int32_t virtual_stages) {
    const int overlap = r->job.compat == MODEL_COMPAT_CORRECTED && r->job.training.pp_comm_overlap &&
                        virtual_stages > 1 && r->cfg.schedule == STEP_SCHEDULE_INTERLEAVED;
    return r->cfg.p2p_async || overlap ? "async" : "blocking";
}

/* The links, their bytes and each group's traffic (both outputs of a run). */
static void links_json(json_writer_t *w, const run_result_t *r) {
    json_open_object(w, "links");
    json_number(w, "max_utilization", r->n_links > 0 ? r->link_util[0] : 0.0);
    if (r->sim.links_partial)
        json_bool(w, "tensor_links_left_out", 1);
    json_open_array(w, "busiest");
    for (int i = 0; i < r->n_links; i++) {
        json_open_object(w, NULL);
        json_string(w, "link", r->link_names[i]);
        json_number(w, "utilization", r->link_util[i]);
        if (r->sim.has_traffic)
            json_number(w, "bytes", r->sim.link_bytes[i]);
        json_close_object(w);
    }
    json_close_array(w);
    if (r->sim.has_traffic)
        json_number(w, "total_bytes", r->sim.total_link_bytes);
    json_close_object(w);
    if (r->sim.has_traffic)
        output_traffic_json(w, &r->sim.traffic);
}

/* --workload: the workload's step (no estimate, no layout, no memory: a workload carries none). */
static cJSON *workload_json(const run_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    const step_result_t *s = &r->res;
    json_writer_t w;
    json_start(&w, NULL);
    json_number(&w, "step_time_s", s->step_time_s);
    json_open_object(&w, "workload");
    json_string(&w, "path", o->workload);
    json_int(&w, "ranks", r->wl_ranks);
    json_int(&w, "nodes", r->wl_nodes);
    json_string(&w, "compute", step_wl_compute_name(r->wl_compute));
    json_string(&w, "system", r->job.system.name);
    json_close_object(&w);
    if (r->perturbed)
        what_if_json(&w, r, scn, o);
    json_open_object(&w, "breakdown_s");
    json_number(&w, "compute", s->breakdown.compute_s);
    json_number(&w, "exposed_tp_comm", s->breakdown.exposed_tp_comm_s);
    json_number(&w, "exposed_pp_comm", s->breakdown.exposed_pp_comm_s);
    json_number(&w, "exposed_dp_comm", s->breakdown.exposed_dp_comm_s);
    json_number(&w, "bubble_idle", s->breakdown.bubble_idle_s);
    json_close_object(&w);
    json_int(&w, "events", s->events);
    json_int(&w, "flows", s->flows);
    if (!o->deterministic)
        json_number(&w, "wall_time_s", r->wall_s);
    links_json(&w, r);
    json_open_object(&w, "simulation");
    json_string(&w, "comm", r->cfg.comm == SIM_COMM_ANALYTIC ? "analytic" : "network");
    json_string(&w, "topology", r->topology);
    json_string(&w, "calibration", r->calibrated ? "nccl" : "none");
    json_int(&w, "simulated_gpus", s->simulated_gpus);
    json_int(&w, "gpus", s->gpus);
    json_int(&w, "operations", s->operations);
    json_int(&w, "critical_gpu", s->critical_gpu);
    json_close_object(&w);
    if (r->exported) {
        json_open_object(&w, "export_et");
        json_string(&w, "dir", o->export_et);
        json_int(&w, "ranks", r->exported_ranks);
        json_int(&w, "nodes", r->exported_nodes);
        json_close_object(&w);
    }
    if (r->traced)
        output_trace_json(&w, o->trace, &r->trace_stats);
    return json_take(&w);
}

static cJSON *result_json(const run_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    if (r->workload)
        return workload_json(r, scn, o);
    const step_result_t *s = &r->res;
    const model_summary_t *su = &r->est.summary;
    json_writer_t w;
    char buf[64];
    json_start(&w, NULL);
    json_number(&w, "step_time_s", s->step_time_s);
    if (!s->collapse_exact)
        json_string(&w, "warning", STEP_APPROX_WARNING);
    json_number(&w, "analytic_iteration_time_s", su->iteration_time_s);
    json_number(&w, "throughput_samples_per_s",
                s->step_time_s > 0 ? (double)r->job.global_batch / s->step_time_s : 0);
    output_throughput_json(&w, "", &r->job, s->step_time_s);
    if (r->perturbed)
        what_if_json(&w, r, scn, o);
    json_open_object(&w, "breakdown_s");
    json_number(&w, "compute", s->breakdown.compute_s);
    json_number(&w, "exposed_tp_comm", s->breakdown.exposed_tp_comm_s);
    json_number(&w, "exposed_pp_comm", s->breakdown.exposed_pp_comm_s);
    json_number(&w, "exposed_dp_comm", s->breakdown.exposed_dp_comm_s);
    json_number(&w, "bubble_idle", s->breakdown.bubble_idle_s);
    json_close_object(&w);
    json_int(&w, "events", s->events);
    json_int(&w, "flows", s->flows);
    if (!o->deterministic)
        json_number(&w, "wall_time_s", r->wall_s);
    links_json(&w, r);
    if (r->has_view)
        view_json(&w, &r->view);
    json_open_object(&w, "memory_gb");
    json_number(&w, "peak", s->peak_memory_gb);
    json_int(&w, "peak_gpu", s->peak_memory_gpu);
    json_number(&w, "peak_activations", s->peak_activations_gb);
    json_number(&w, "static", s->static_memory_gb);
    json_number(&w, "analytic", su->memory_gb);
    json_number(&w, "analytic_activations", su->activations_gb);
    json_number(&w, "capacity", r->job.system.hbm_capacity_gb);
    json_bool(&w, "fits", s->peak_memory_gb <= r->job.system.hbm_capacity_gb);
    if (r->stage_act_gb) {
        json_open_array(&w, "stage_peak_activations");
        for (int64_t p = 0; p < r->job.par.pp; p++)
            json_number(&w, NULL, r->stage_act_gb[p]);
        json_close_array(&w);
    }
    json_close_object(&w);
    json_open_object(&w, "simulation");
    json_string(&w, "comm", r->cfg.comm == SIM_COMM_ANALYTIC ? "analytic" : "network");
    json_string(&w, "topology", r->topology);
    json_string(&w, "calibration", r->calibrated ? "nccl" : "none");
    json_string(&w, "schedule", step_schedule_name(r->cfg.schedule));
    json_int(&w, "virtual_stages", s->virtual_stages);
    json_string(&w, "placement", step_placement_format(&r->cfg.placement, buf, sizeof buf));
    json_string(&w, "p2p", sends_name(r, s->virtual_stages));
    json_string(&w, "granularity", s->granularity == STEP_GRANULARITY_LAYER ? "layer" : "microbatch");
    json_open_object(&w, "collapse");
    json_string(&w, "collapsed", level_name(s->collapsed));
    json_bool(&w, "exact", s->collapse_exact);
    json_int(&w, "simulated_gpus", s->simulated_gpus);
    json_int(&w, "gpus", s->gpus);
    json_string(&w, "note", s->collapse_note);
    json_close_object(&w);
    json_int(&w, "operations", s->operations);
    json_int(&w, "microbatches", s->microbatches);
    json_int(&w, "critical_gpu", s->critical_gpu);
    json_int(&w, "critical_stage", s->critical_stage);
    json_number(&w, "optimizer_s", s->optimizer_s);
    if (model_is_moe(&r->job.model)) { /* a job with experts only: dense output unchanged */
        int64_t ep, ep_t, edp, edp_t;
        model_expert_groups(&r->job, &ep, &ep_t, &edp, &edp_t);
        json_open_object(&w, "experts");
        json_int(&w, "ep", ep);
        json_int(&w, "edp", edp);
        json_number(&w, "skew", r->cfg.expert_skew);
        json_int(&w, "seed", (int64_t)r->cfg.expert_seed);
        json_close_object(&w);
    }
    json_close_object(&w);
    if (r->traced)
        output_trace_json(&w, o->trace, &r->trace_stats);
    if (r->exported) {
        json_open_object(&w, "export_et");
        json_string(&w, "dir", o->export_et);
        json_int(&w, "ranks", r->exported_ranks);
        json_int(&w, "nodes", r->exported_nodes);
        json_close_object(&w);
    }
    output_config_json(&w, su, &r->job, scn);
    if (scn->name[0])
        json_string(&w, "scenario", scn->name);
    return json_take(&w);
}

static void row(FILE *out, const char *label, double t, double total) {
    fprintf(out, "    %-32s %14.6f %9.2f\n", label, t, total > 0 ? 100.0 * t / total : 0.0);
}

/* The busiest links and the traffic (both outputs of a run). */
static void links_text(FILE *out, const run_result_t *r) {
    const step_result_t *s = &r->res;
    if (r->n_links > 0) {
        fprintf(out, "\n  busiest links (average utilization over the step%s)\n",
                !s->collapse_exact     ? "; approximate: the simulated tensor rank's links only"
                : r->sim.links_partial ? "; the tensor groups' links left out (not counted)"
                                       : "");
        for (int i = 0; i < r->n_links; i++) {
            fprintf(out, "    %-40s %8.2f%%", r->link_names[i], 100.0 * r->link_util[i]);
            if (r->sim.has_traffic)
                fprintf(out, " %14.3f GB", r->sim.link_bytes[i] * 1e-9);
            fprintf(out, "\n");
        }
    }
    if (r->sim.has_traffic) {
        fprintf(out, "    %-40s %9s %14.3f GB\n", "all links together", "", r->sim.total_link_bytes * 1e-9);
        output_traffic_text(out, &r->sim.traffic);
    }
}

static void trailer_text(FILE *out, const run_result_t *r, const run_opts_t *o) {
    if (r->traced)
        fprintf(out, "\n  trace: %s (%" PRId64 " slices, %" PRId64 " arrows, %" PRId64 " counter samples)\n",
                o->trace, r->trace_stats.complete_events, r->trace_stats.flow_arrows,
                r->trace_stats.counter_events);
    if (r->exported)
        fprintf(out, "\n  exported: %s/stepsim.{0..%d}.et (Chakra execution traces, %" PRId64 " nodes)\n",
                o->export_et, r->exported_ranks - 1, r->exported_nodes);
}

static void workload_text(FILE *out, const run_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    const step_result_t *s = &r->res;
    char line[1024];
    snprintf(line, sizeof line,
             "stepsim run: workload %s: %d ranks, %" PRId64 " nodes, compute from the %s%s%s", o->workload,
             r->wl_ranks, r->wl_nodes, r->wl_compute == STEP_WL_COMPUTE_MODEL ? "roofline of " : "trace",
             r->wl_compute == STEP_WL_COMPUTE_MODEL ? r->job.system.name : "", "");
    output_wrapped(out, 2, line);
    if (r->cfg.comm == SIM_COMM_ANALYTIC)
        snprintf(line, sizeof line,
                 "simulation: analytic communication on %s (the model's times, no network)",
                 r->job.system.name);
    else
        snprintf(line, sizeof line, "simulation: network communication on %s (calibration %s)", r->topology,
                 r->calibrated ? "nccl" : "none");
    output_wrapped_list(out, 12, line);
    fprintf(out,
            "            %d GPUs simulated, %" PRId64 " operations, %" PRId64 " events, %" PRId64 " flows",
            s->simulated_gpus, s->operations, s->events, s->flows);
    if (!o->deterministic)
        fprintf(out, ", %.2f s wall", r->wall_s);
    fprintf(out, "\n\n");
    const double t = s->step_time_s;
    fprintf(out, "  %-34s %.6f s\n", "step time (simulated)", t);
    if (r->perturbed)
        what_if_text(out, r, scn);
    fprintf(out, "\n  %-34s %14s %9s\n", "time breakdown", "time (s)", "share (%)");
    fprintf(out, "    (GPU %d: the last to finish)\n", s->critical_gpu);
    row(out, "compute", s->breakdown.compute_s, t);
    row(out, "exposed tensor-parallel comm", s->breakdown.exposed_tp_comm_s, t);
    row(out, "exposed pipeline comm", s->breakdown.exposed_pp_comm_s, t);
    row(out, "exposed data-parallel comm", s->breakdown.exposed_dp_comm_s, t);
    row(out, "bubble and idle", s->breakdown.bubble_idle_s, t);
    links_text(out, r);
    trailer_text(out, r, o);
}

static void result_text(FILE *out, const run_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    if (r->workload) {
        workload_text(out, r, scn, o);
        return;
    }
    const step_result_t *s = &r->res;
    const model_summary_t *su = &r->est.summary;
    char buf[64];
    output_job_header(out, "run", &r->job, scn); /* the job simulated and estimated */
    fprintf(out, "layout: ");
    output_layout_text(out, &su->par);
    fprintf(out,
            "\n        %" PRId64 " microbatches of %" PRId64 " sequences, %" PRId64 " blocks per stage\n",
            su->n_microbatches, su->par.mbs, su->layers_per_stage);
    char line[1024], vs[16] = "";
    if (s->virtual_stages > 1 && r->cfg.schedule == STEP_SCHEDULE_INTERLEAVED) /* zb-v, dualpipe: 2 */
        snprintf(vs, sizeof vs, ":%d", s->virtual_stages);
    if (r->cfg.comm == SIM_COMM_ANALYTIC)
        snprintf(line, sizeof line,
                 "simulation: %s%s schedule, %s sends, analytic communication (the model's times, no "
                 "network), placement %s",
                 step_schedule_name(r->cfg.schedule), vs, sends_name(r, s->virtual_stages),
                 step_placement_format(&r->cfg.placement, buf, sizeof buf));
    else
        snprintf(line, sizeof line,
                 "simulation: %s%s schedule, %s sends, network communication on %s (calibration %s), "
                 "placement %s",
                 step_schedule_name(r->cfg.schedule), vs, sends_name(r, s->virtual_stages), r->topology,
                 r->calibrated ? "nccl" : "none", step_placement_format(&r->cfg.placement, buf, sizeof buf));
    output_wrapped_list(out, 12, line);
    snprintf(line, sizeof line, "            %d of %d GPUs simulated (collapsed: %s; %s)", s->simulated_gpus,
             s->gpus, level_name(s->collapsed), s->collapse_note);
    output_wrapped(out, 12, line);
    if (!s->collapse_exact)
        fprintf(out, "  warning: %s\n", STEP_APPROX_WARNING);
    if (model_is_moe(&r->job.model)) { /* a job with experts only: dense output unchanged */
        int64_t ep, ep_t, edp, edp_t;
        model_expert_groups(&r->job, &ep, &ep_t, &edp, &edp_t);
        if (r->cfg.expert_skew > 0.0)
            snprintf(line, sizeof line,
                     "            experts: ep %" PRId64 ", expert data parallel %" PRId64
                     ", routing skewed (Zipf exponent %g, seed %" PRIu64
                     "; all-to-alls at the busiest GPU's share)",
                     ep, edp, r->cfg.expert_skew, r->cfg.expert_seed);
        else
            snprintf(line, sizeof line,
                     "            experts: ep %" PRId64 ", expert data parallel %" PRId64 ", uniform routing",
                     ep, edp);
        output_wrapped(out, 12, line);
    }
    fprintf(out, "            %" PRId64 " operations (%s granularity), %" PRId64 " events, %" PRId64 " flows",
            s->operations, s->granularity == STEP_GRANULARITY_LAYER ? "layer" : "microbatch", s->events,
            s->flows);
    if (!o->deterministic)
        fprintf(out, ", %.2f s wall", r->wall_s);
    fprintf(out, "\n\n");
    const double t = s->step_time_s, a = su->iteration_time_s;
    fprintf(out, "  %-34s %.6f s\n", "step time (simulated)", t);
    fprintf(out, "  %-34s %.6f s (simulated %+.3f%%)\n", "iteration time (analytic estimate)", a,
            a > 0 ? 100.0 * (t / a - 1.0) : 0.0);
    fprintf(out, "  %-34s %.4f samples/s\n", "throughput", t > 0 ? (double)r->job.global_batch / t : 0.0);
    output_throughput_text(out, 34, &r->job, t);
    if (r->perturbed)
        what_if_text(out, r, scn);
    fprintf(out, "\n  %-34s %14s %9s\n", "time breakdown", "time (s)", "share (%)");
    fprintf(out, "    (GPU %d, stage %d: the last to finish)\n", s->critical_gpu, s->critical_stage);
    row(out, "compute", s->breakdown.compute_s, t);
    row(out, "exposed tensor-parallel comm", s->breakdown.exposed_tp_comm_s, t);
    row(out, "exposed pipeline comm", s->breakdown.exposed_pp_comm_s, t);
    row(out, "exposed data-parallel comm", s->breakdown.exposed_dp_comm_s, t);
    row(out, "bubble and idle", s->breakdown.bubble_idle_s, t);
    if (s->optimizer_s > 0)
        fprintf(out, "    (compute includes the optimizer step, %.6f s)\n", s->optimizer_s);
    fprintf(out, "\n  %-34s %14s %14s\n", "memory per GPU (GB)", "simulated", "analytic");
    fprintf(out, "    %-32s %14.3f %14.3f\n", "weights, gradients, optimizer", s->static_memory_gb,
            su->weights_gb + su->grads_gb + su->optimizer_gb + su->fp8_weights_gb + su->fsdp_gathered_gb);
    fprintf(out, "    %-32s %14.3f %14.3f\n", "activations (peak)", s->peak_activations_gb,
            su->activations_gb);
    fprintf(out, "    %-32s %14.3f %14.3f   of %.6g: %s\n", "total (peak)", s->peak_memory_gb, su->memory_gb,
            r->job.system.hbm_capacity_gb,
            s->peak_memory_gb <= r->job.system.hbm_capacity_gb ? "fits" : "DOES NOT FIT");
    fprintf(out, "    (peak on GPU %d)\n", s->peak_memory_gpu);
    links_text(out, r);
    if (r->has_view)
        view_text(out, &r->view);
    trailer_text(out, r, o);
}

cJSON *print_run_json(const run_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    return result_json(r, scn, o);
}

int print_run(FILE *out, const run_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    if (!o->json) {
        result_text(out, r, scn, o);
        return 0;
    }
    cJSON *doc = result_json(r, scn, o);
    int rc = doc ? json_print(out, doc) : -1;
    cJSON_Delete(doc);
    return rc;
}
