/* print_topo.c - what `stepsim topo` prints: the summary of a topology (the fields of docs/cli.md) as
 * text or as one JSON object. */
#include <stdio.h>

#include "output.h"
#include "print.h"

static int print_json(FILE *out, const topo_t *t, const topo_summary_t *s, const int64_t tier[4]) {
    json_writer_t w;
    json_start(&w, out);
    json_string(&w, "name", s->name);
    json_string(&w, "kind", s->kind);
    json_int(&w, "gpus", s->gpus);
    json_int(&w, "nodes", s->nodes);
    json_int(&w, "switches", s->switches);
    json_int(&w, "links", s->links);
    json_int(&w, "diameter_hops", s->diameter_hops);
    json_number(&w, "bisection_bandwidth_bytes_per_s", s->bisection_bandwidth_bytes_per_s);
    json_number(&w, "injection_bandwidth_bytes_per_s", s->injection_bandwidth_bytes_per_s);
    json_string(&w, "routing", topo_routing_name(topo_routing(t)));
    json_open_array(&w, "switches_by_tier");
    for (int k = 1; k <= 3; k++)
        if (tier[k] || k == 1)
            json_int(&w, NULL, tier[k]);
    json_close_array(&w);
    json_int(&w, "nvswitches", s->nvswitches);
    json_int(&w, "nics", s->nics);
    json_int(&w, "nvlink_links", s->nvlink_links);
    json_int(&w, "pcie_links", s->pcie_links);
    json_bool(&w, "diameter_exhaustive", s->diameter_exhaustive);
    if (s->bisection_closed_form_bytes_per_s > 0)
        json_number(&w, "bisection_closed_form_bytes_per_s", s->bisection_closed_form_bytes_per_s);
    json_open_object(&w, "cost");
    json_int(&w, "switches", s->switches);
    json_int(&w, "cables", s->cables);
    json_int(&w, "optical_cables", s->optical_cables);
    json_int(&w, "optical_transceivers", s->optical_transceivers);
    json_close_object(&w);
    json_open_array(&w, "technologies");
    for (int i = 0; i < s->n_techs; i++) {
        const topo_tech_use_t *u = &s->techs[i];
        json_open_object(&w, NULL);
        json_string(&w, "name", topo_tech_name(u->tech));
        json_int(&w, "links", u->links);
        json_number(&w, "bandwidth_bytes_per_s", u->bandwidth_bytes_per_s);
        json_number(&w, "latency_s", u->latency_s);
        json_number(&w, "efficiency", topo_tech_info(u->tech)->efficiency);
        json_close_object(&w);
    }
    json_close_array(&w);
    if (topo_failed_link_count(t) > 0 || topo_slowed_link_count(t) > 0) {
        char name[96];
        json_open_array(&w, "failed_links");
        for (int64_t l = 0; l < topo_link_count(t); l++)
            if (topo_link_failed(t, l))
                json_string(&w, NULL, topo_link_name(t, l, name, sizeof name));
        json_close_array(&w);
        json_open_array(&w, "slowed_links");
        for (int64_t l = 0; l < topo_link_count(t); l++) {
            if (topo_link_failed(t, l) || topo_link_bandwidth_factor(t, l) == 1.0)
                continue;
            topo_link_info_t li;
            topo_link_get(t, l, &li);
            json_open_object(&w, NULL);
            json_string(&w, "name", topo_link_name(t, l, name, sizeof name));
            json_number(&w, "bandwidth_factor", topo_link_bandwidth_factor(t, l));
            json_number(&w, "bandwidth_bytes_per_s", li.bandwidth_bytes_per_s);
            json_close_object(&w);
        }
        json_close_array(&w);
    }
    return json_finish(&w);
}

/* The failed (slowed) links by name, at most 8 per line kind, then how many more. */
static void print_perturbed(FILE *out, const topo_t *t, int failed) {
    const int64_t total = failed ? topo_failed_link_count(t) : topo_slowed_link_count(t);
    if (total == 0)
        return;
    fprintf(out, "%-16s%lld", failed ? "failed links" : "slowed links", (long long)total);
    int64_t shown = 0;
    char name[96];
    for (int64_t l = 0; l < topo_link_count(t) && shown < 8; l++) {
        const double f = topo_link_bandwidth_factor(t, l);
        if (failed ? !topo_link_failed(t, l) : (topo_link_failed(t, l) || f == 1.0))
            continue;
        fprintf(out, "%s%s", shown ? ", " : ": ", topo_link_name(t, l, name, sizeof name));
        if (!failed)
            fprintf(out, " x%.4g", f);
        shown++;
    }
    if (total > shown)
        fprintf(out, ", and %lld more", (long long)(total - shown));
    fputc('\n', out);
}

/* "51.2 TB/s" or "800 GB/s" */
static const char *rate(double bytes_per_s, char *buf, size_t size) {
    if (bytes_per_s >= 1e12)
        snprintf(buf, size, "%.4g TB/s", bytes_per_s / 1e12);
    else
        snprintf(buf, size, "%.4g GB/s", bytes_per_s / 1e9);
    return buf;
}

static void print_text(FILE *out, const topo_t *t, const topo_summary_t *s, const int64_t tier[4]) {
    char r1[32], r2[32];
    fprintf(out, "topology        %s (%s, routing %s)\n", s->name, s->kind,
            topo_routing_name(topo_routing(t)));
    fprintf(out, "gpus            %lld in %lld nodes\n", (long long)s->gpus, (long long)s->nodes);
    fprintf(out, "switches        %lld", (long long)s->switches);
    if (tier[2])
        fprintf(out, " (tier 1: %lld, tier 2: %lld, tier 3: %lld)", (long long)tier[1], (long long)tier[2],
                (long long)tier[3]);
    fprintf(out, "; %lld NVSwitch crossbars, %lld NICs\n", (long long)s->nvswitches, (long long)s->nics);
    fprintf(out, "links           %lld network cables; %lld NVLink, %lld PCIe\n", (long long)s->links,
            (long long)s->nvlink_links, (long long)s->pcie_links);
    fprintf(out, "diameter        %lld links%s\n", (long long)s->diameter_hops,
            s->diameter_exhaustive ? "" : " (from representative GPUs)");
    fprintf(out, "bisection       %s", rate(s->bisection_bandwidth_bytes_per_s, r1, sizeof r1));
    if (s->bisection_closed_form_bytes_per_s > 0)
        fprintf(out, " (closed form %s)", rate(s->bisection_closed_form_bytes_per_s, r2, sizeof r2));
    fprintf(out, "\ninjection       %s\n", rate(s->injection_bandwidth_bytes_per_s, r1, sizeof r1));
    fprintf(out, "cost proxy      %lld switches, %lld cables, %lld optical transceivers\n",
            (long long)s->switches, (long long)s->cables, (long long)s->optical_transceivers);
    for (int i = 0; i < s->n_techs; i++) {
        const topo_tech_use_t *u = &s->techs[i];
        fprintf(out, "%-16s%s: %lld links at %s, %.3g us, efficiency %.3g\n", i ? "" : "technologies",
                topo_tech_name(u->tech), (long long)u->links, rate(u->bandwidth_bytes_per_s, r1, sizeof r1),
                u->latency_s * 1e6, topo_tech_info(u->tech)->efficiency);
    }
    if (s->techs_truncated)
        fprintf(out, "%-16s(more technology, bandwidth and latency pairs not listed)\n", "");
    print_perturbed(out, t, 1);
    print_perturbed(out, t, 0);
}

int print_topo(FILE *out, const topo_result_t *r, int json) {
    if (json)
        return print_json(out, r->topo, &r->summary, r->switches_by_tier);
    print_text(out, r->topo, &r->summary, r->switches_by_tier);
    return 0;
}
