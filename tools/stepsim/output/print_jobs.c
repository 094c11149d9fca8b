/* print_jobs.c - what `stepsim run` prints for a scenario with jobs (commands/jobs.h): per job its
 * step time, its slowdown against itself alone on the same GPUs and its breakdown, then the links
 * where the jobs met with each job's share; as text or one --json object (docs/cli.md). Nothing
 * here depends on the wall clock: the output is byte-identical run to run. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobs.h"
#include "output.h"
#include "print.h"
#include "scenario_jobs.h"

static void breakdown_json(json_writer_t *w, const char *key, const step_breakdown_t *b) {
    json_open_object(w, key);
    json_number(w, "compute", b->compute_s);
    json_number(w, "exposed_tp_comm", b->exposed_tp_comm_s);
    json_number(w, "exposed_pp_comm", b->exposed_pp_comm_s);
    json_number(w, "exposed_dp_comm", b->exposed_dp_comm_s);
    json_number(w, "bubble_idle", b->bubble_idle_s);
    json_close_object(w);
}

static double slowdown(const jobs_job_t *j) {
    return j->alone.step_time_s > 0 ? j->res.step_time_s / j->alone.step_time_s : 0.0;
}

static double link_total(const jobs_result_t *r, int32_t i) {
    double t = 0.0;
    for (int32_t j = 0; j < r->n; j++)
        t += r->sim.met_job_bytes[(int64_t)i * r->n + j];
    return t;
}

static cJSON *result_json(const jobs_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    const scn_jobs_t *sj = scn->jobs;
    json_writer_t w;
    char buf[64];
    json_start(&w, NULL);
    json_open_array(&w, "jobs");
    for (int32_t i = 0; i < r->n; i++) {
        const jobs_job_t *j = &r->job[i];
        const step_result_t *s = &j->res;
        json_open_object(&w, NULL);
        json_string(&w, "name", j->name);
        json_string(&w, "model", scenario_model_name(&sj->job[i].scn));
        json_string(&w, "system", scenario_system_name(&sj->job[i].scn));
        json_int(&w, "gpus", j->job.gpus);
        json_string(&w, "allocation", j->allocation);
        json_string(&w, "topology_gpus", j->gpus_text);
        json_int(&w, "global_batch", j->job.global_batch);
        json_number(&w, "step_time_s", s->step_time_s);
        if (j->has_alone) {
            json_number(&w, "alone_step_time_s", j->alone.step_time_s);
            json_number(&w, "slowdown", slowdown(j));
            json_number(&w, "cost_s", s->step_time_s - j->alone.step_time_s);
            json_number(&w, "cost_pct", 100.0 * (slowdown(j) - 1.0));
        }
        json_number(&w, "analytic_iteration_time_s", j->est.summary.iteration_time_s);
        json_number(&w, "throughput_samples_per_s",
                    s->step_time_s > 0 ? (double)j->job.global_batch / s->step_time_s : 0.0);
        breakdown_json(&w, "breakdown_s", &s->breakdown);
        if (j->has_alone)
            breakdown_json(&w, "alone_breakdown_s", &j->alone.breakdown);
        json_int(&w, "critical_gpu", s->critical_gpu);
        json_int(&w, "critical_stage", s->critical_stage);
        json_string(&w, "schedule", step_schedule_name(j->cfg.schedule));
        json_int(&w, "virtual_stages", s->virtual_stages);
        json_int(&w, "microbatches", s->microbatches);
        json_int(&w, "operations", s->operations);
        json_number(&w, "peak_memory_gb", s->peak_memory_gb);
        output_config_json(&w, &j->est.summary, &j->job, &sj->job[i].scn);
        json_close_object(&w);
    }
    json_close_array(&w);
    json_open_object(&w, "links_met");
    json_int(&w, "count", r->sim.met_total);
    json_open_array(&w, "busiest");
    for (int32_t i = 0; i < r->sim.n_met; i++) {
        const double tot = link_total(r, i);
        json_open_object(&w, NULL);
        json_string(&w, "link", r->sim.met_names[i]);
        json_number(&w, "utilization", r->sim.met_utilization[i]);
        json_open_object(&w, "bytes_by_job");
        for (int32_t j = 0; j < r->n; j++)
            json_number(&w, r->job[j].name, r->sim.met_job_bytes[(int64_t)i * r->n + j]);
        json_close_object(&w);
        json_open_object(&w, "share_by_job");
        for (int32_t j = 0; j < r->n; j++)
            json_number(&w, r->job[j].name,
                        tot > 0 ? r->sim.met_job_bytes[(int64_t)i * r->n + j] / tot : 0.0);
        json_close_object(&w);
        json_close_object(&w);
    }
    json_close_array(&w);
    json_close_object(&w);
    json_open_object(&w, "simulation");
    json_string(&w, "comm", "network");
    json_string(&w, "topology", r->topology);
    json_int(&w, "topology_gpus", r->topology_gpus);
    json_int(&w, "gpus_per_node", r->gpus_per_node);
    json_int(&w, "idle_gpus", r->idle_gpus);
    json_string(&w, "calibration", r->calibrated ? "nccl" : "none");
    json_string(&w, "fidelity", r->cfg.engine.fidelity == SIM_FIDELITY_STEP ? "step" : "fast");
    json_string(&w, "placement", step_placement_format(&r->cfg.placement, buf, sizeof buf));
    json_string(&w, "p2p", r->cfg.p2p_async ? "async" : "blocking");
    json_string(&w, "collapse", r->n > 0 ? r->job[0].res.collapse_note : "");
    json_int(&w, "seed", (int64_t)r->seed);
    json_bool(&w, "baseline", r->baseline);
    json_number(&w, "end_s", r->sim.end_s);
    json_int(&w, "operations", r->sim.operations);
    json_int(&w, "events", r->sim.events);
    json_int(&w, "flows", r->sim.flows);
    json_close_object(&w);
    if (r->traced)
        output_trace_json(&w, o->trace, &r->trace_stats);
    if (scn->name[0])
        json_string(&w, "scenario", scn->name);
    return json_take(&w);
}

static void result_text(FILE *out, const jobs_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    const scn_jobs_t *sj = scn->jobs;
    char buf[64], line[1024];
    snprintf(line, sizeof line,
             "stepsim run: %d jobs on one fabric, %s (%" PRId64 " GPUs, nodes of %d; %" PRId64 " idle)",
             (int)r->n, r->topology, r->topology_gpus, (int)r->gpus_per_node, r->idle_gpus);
    output_wrapped(out, 2, line);
    snprintf(line, sizeof line,
             "simulation: together on one engine, network communication (calibration %s, %s fidelity), "
             "placement %s, %s sends",
             r->calibrated ? "nccl" : "none", r->cfg.engine.fidelity == SIM_FIDELITY_STEP ? "step" : "fast",
             step_placement_format(&r->cfg.placement, buf, sizeof buf),
             r->cfg.p2p_async ? "async" : "blocking");
    output_wrapped_list(out, 12, line);
    snprintf(line, sizeof line, "            %s", r->n > 0 ? r->job[0].res.collapse_note : "");
    output_wrapped(out, 12, line);
    fprintf(out,
            "            %" PRId64 " operations, %" PRId64 " events, %" PRId64
            " flows; random allocations: seed %" PRIu64 "\n",
            r->sim.operations, r->sim.events, r->sim.flows, r->seed);
    for (int32_t i = 0; i < r->n; i++) {
        const jobs_job_t *j = &r->job[i];
        const step_result_t *s = &j->res;
        snprintf(line, sizeof line, "\njob %s: %s on %s, %" PRId64 " GPUs %s (%s), global batch %" PRId64,
                 j->name, scenario_model_name(&sj->job[i].scn), scenario_system_name(&sj->job[i].scn),
                 j->job.gpus, j->gpus_text, j->allocation, j->job.global_batch);
        output_wrapped(out, 2, line);
        fprintf(out, "  layout: ");
        output_layout_text(out, &j->est.summary.par);
        fprintf(out, "; %s", step_schedule_name(j->cfg.schedule));
        if (s->virtual_stages > 1 && j->cfg.schedule == STEP_SCHEDULE_INTERLEAVED)
            fprintf(out, ":%d", s->virtual_stages);
        fprintf(out, ", %" PRId64 " microbatches\n", s->microbatches);
        fprintf(out, "  %-28s %.6f s\n", "step time (together)", s->step_time_s);
        if (j->has_alone) {
            fprintf(out, "  %-28s %.6f s\n", "alone on the same GPUs", j->alone.step_time_s);
            fprintf(out, "  %-28s %.6f (%+.6f s, %+.4f%%)\n", "slowdown", slowdown(j),
                    s->step_time_s - j->alone.step_time_s, 100.0 * (slowdown(j) - 1.0));
        }
        fprintf(out, "  %-28s %.6f s\n", "analytic estimate (alone)", j->est.summary.iteration_time_s);
        snprintf(line, sizeof line,
                 "  breakdown of GPU %d (stage %d, the job's last to finish), s: compute %.6f, "
                 "exposed tp %.6f, pp %.6f, dp %.6f, bubble and idle %.6f",
                 s->critical_gpu, s->critical_stage, s->breakdown.compute_s, s->breakdown.exposed_tp_comm_s,
                 s->breakdown.exposed_pp_comm_s, s->breakdown.exposed_dp_comm_s, s->breakdown.bubble_idle_s);
        output_wrapped_list(out, 4, line);
        if (j->has_alone) {
            snprintf(line, sizeof line,
                     "  alone, s: compute %.6f, exposed tp %.6f, pp %.6f, dp %.6f, bubble and idle %.6f",
                     j->alone.breakdown.compute_s, j->alone.breakdown.exposed_tp_comm_s,
                     j->alone.breakdown.exposed_pp_comm_s, j->alone.breakdown.exposed_dp_comm_s,
                     j->alone.breakdown.bubble_idle_s);
            output_wrapped_list(out, 4, line);
        }
    }
    fprintf(out, "\nlinks where the jobs met: %d", (int)r->sim.met_total);
    if (r->sim.n_met > 0) {
        fprintf(out, " (the %d busiest;\n  average utilization over %.6f s, each job's share of the bytes)\n",
                (int)r->sim.n_met, r->sim.end_s);
        for (int32_t i = 0; i < r->sim.n_met; i++) {
            const double tot = link_total(r, i);
            size_t used = (size_t)snprintf(line, sizeof line, "  %-36s %7.2f%%  ", r->sim.met_names[i],
                                           100.0 * r->sim.met_utilization[i]);
            for (int32_t j = 0; j < r->n && used < sizeof line; j++) {
                const double b = r->sim.met_job_bytes[(int64_t)i * r->n + j];
                used +=
                    (size_t)snprintf(line + used, sizeof line - used, "%s%s %.1f%% (%.6g GB)", j ? ", " : "",
                                     r->job[j].name, tot > 0 ? 100.0 * b / tot : 0.0, b * 1e-9);
            }
            output_wrapped_list(out, 4, line);
        }
    } else {
        fprintf(out, "\n");
    }
    if (r->traced)
        fprintf(out,
                "\ntrace: %s (%" PRId64 " slices, %" PRId64
                " counter samples; one process per job and node)\n",
                o->trace, r->trace_stats.complete_events, r->trace_stats.counter_events);
}

int print_jobs(FILE *out, const jobs_result_t *r, const scenario_t *scn, const run_opts_t *o) {
    if (!o->json) {
        result_text(out, r, scn, o);
        return 0;
    }
    cJSON *doc = result_json(r, scn, o);
    const int rc = doc ? json_print(out, doc) : -1;
    cJSON_Delete(doc);
    return rc;
}

/* ---- compare ------------------------------------------------------------------------------------- */

static cJSON *compare_json(const jobs_result_t *const *rs, const char *const *labels, int n,
                           const scenario_t *scn) {
    json_writer_t w;
    json_start(&w, NULL);
    json_open_array(&w, "topologies");
    for (int t = 0; t < n; t++) {
        const jobs_result_t *r = rs[t];
        json_open_object(&w, NULL);
        json_string(&w, "label", labels[t]);
        json_string(&w, "topology", r->topology);
        json_int(&w, "topology_gpus", r->topology_gpus);
        json_int(&w, "links_met", r->sim.met_total);
        json_open_array(&w, "jobs");
        for (int32_t i = 0; i < r->n; i++) {
            const jobs_job_t *j = &r->job[i];
            json_open_object(&w, NULL);
            json_string(&w, "name", j->name);
            json_string(&w, "topology_gpus", j->gpus_text);
            json_number(&w, "step_time_s", j->res.step_time_s);
            if (j->has_alone) {
                json_number(&w, "alone_step_time_s", j->alone.step_time_s);
                json_number(&w, "slowdown", slowdown(j));
                json_number(&w, "cost_s", j->res.step_time_s - j->alone.step_time_s);
                json_number(&w, "cost_pct", 100.0 * (slowdown(j) - 1.0));
            }
            json_number(&w, "throughput_samples_per_s",
                        j->res.step_time_s > 0 ? (double)j->job.global_batch / j->res.step_time_s : 0.0);
            json_close_object(&w);
        }
        json_close_array(&w);
        json_close_object(&w);
    }
    json_close_array(&w);
    if (n > 0) {
        json_open_object(&w, "simulation");
        json_string(&w, "calibration", rs[0]->calibrated ? "nccl" : "none");
        json_string(&w, "collapse", rs[0]->n > 0 ? rs[0]->job[0].res.collapse_note : "");
        json_int(&w, "seed", (int64_t)rs[0]->seed);
        json_bool(&w, "baseline", rs[0]->baseline);
        json_close_object(&w);
    }
    if (scn->name[0])
        json_string(&w, "scenario", scn->name);
    return json_take(&w);
}

int print_jobs_compare(FILE *out, const jobs_result_t *const *rs, const char *const *labels, int n,
                       const scenario_t *scn, int json) {
    if (json) {
        cJSON *doc = compare_json(rs, labels, n, scn);
        const int rc = doc ? json_print(out, doc) : -1;
        cJSON_Delete(doc);
        return rc;
    }
    fprintf(out, "stepsim compare: %d jobs on %d topologies, together and each alone on the same GPUs%s\n",
            n > 0 ? (int)rs[0]->n : 0, n, n > 0 && !rs[0]->baseline ? " (baseline off)" : "");
    fprintf(out, "  %-14s %-8s %-20s %12s %12s %9s %9s\n", "topology", "job", "GPUs", "together (s)",
            "alone (s)", "slowdown", "links met");
    for (int t = 0; t < n; t++)
        for (int32_t i = 0; i < rs[t]->n; i++) {
            const jobs_job_t *j = &rs[t]->job[i];
            fprintf(out, "  %-14.14s %-8.8s %-20.20s %12.6f ", i == 0 ? labels[t] : "", j->name, j->gpus_text,
                    j->res.step_time_s);
            if (j->has_alone)
                fprintf(out, "%12.6f %9.6f", j->alone.step_time_s, slowdown(j));
            else
                fprintf(out, "%12s %9s", "-", "-");
            if (i == 0)
                fprintf(out, " %9d\n", (int)rs[t]->sim.met_total);
            else
                fprintf(out, "\n");
        }
    return 0;
}
