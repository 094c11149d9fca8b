/* star.c - the ideal non-blocking star (the `ideal` topology), optionally with NVLink domains: the
 * hand-made link table behind the step's analytic communication (no network), bench_sim and the
 * closed-form tests. The `ideal` topology of the command line is built by topo/ like every other kind.
 * Every route is [up link of src, down link of dst]: the switch has no internal limit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sim.h"

static int star_route(void *ctx, int32_t src, int32_t dst, int32_t *links, int32_t cap) {
    const sim_star_t *s = ctx;
    if (src < 0 || dst < 0 || src >= s->n_gpus || dst >= s->n_gpus || src == dst || cap < 2)
        return -1;
    const int32_t g = s->gpus_per_domain;
    if (g > 1 && src / g == dst / g) {
        links[0] = 2 * s->n_gpus + 2 * src;
        links[1] = 2 * s->n_gpus + 2 * dst + 1;
    } else {
        links[0] = 2 * src;
        links[1] = 2 * dst + 1;
    }
    return 2;
}

/* Links 2n and up are NVLink (star.h's numbering). */
static int star_link_kind(void *ctx, int32_t link) {
    const sim_star_t *s = ctx;
    return link >= 2 * s->n_gpus ? SIM_LINK_NVLINK : SIM_LINK_NETWORK;
}

static int positive(double x) {
    return x > 0.0 && isfinite(x);
}

static int non_negative(double x) {
    return x >= 0.0 && isfinite(x);
}

int sim_star_init(sim_star_t *s, const sim_star_params_t *p) {
    memset(s, 0, sizeof *s);
    const int32_t g = p->gpus_per_domain < 1 ? 1 : p->gpus_per_domain;
    if (p->n_gpus < 1 || p->n_gpus > (1 << 26) || !positive(p->nic_bytes_per_s) ||
        !non_negative(p->nic_latency_s))
        return SIM_EINVAL;
    if (g > 1 && (!positive(p->nvlink_bytes_per_s) || !non_negative(p->nvlink_latency_s)))
        return SIM_EINVAL;
    s->n_gpus = p->n_gpus;
    s->gpus_per_domain = g;
    s->n_links = (g > 1 ? 4 : 2) * p->n_gpus;
    s->capacity_bytes_per_s = alloc_malloc((size_t)s->n_links * sizeof *s->capacity_bytes_per_s);
    s->latency_s = alloc_malloc((size_t)s->n_links * sizeof *s->latency_s);
    if (!s->capacity_bytes_per_s || !s->latency_s) {
        sim_star_destroy(s);
        return SIM_ENOMEM;
    }
    for (int32_t i = 0; i < s->n_links; i++) {
        const int nvlink = i >= 2 * p->n_gpus;
        s->capacity_bytes_per_s[i] = nvlink ? p->nvlink_bytes_per_s : p->nic_bytes_per_s;
        s->latency_s[i] = nvlink ? p->nvlink_latency_s : p->nic_latency_s;
    }
    return SIM_OK;
}

void sim_star_destroy(sim_star_t *s) {
    if (!s)
        return;
    free(s->capacity_bytes_per_s);
    free(s->latency_s);
    memset(s, 0, sizeof *s);
}

void sim_star_network(const sim_star_t *s, sim_network_desc_t *d) {
    memset(d, 0, sizeof *d);
    d->n_gpus = s->n_gpus;
    d->n_links = s->n_links;
    d->capacity_bytes_per_s = s->capacity_bytes_per_s;
    d->latency_s = s->latency_s;
    d->route = star_route;
    d->route_ctx = (void *)s;
    d->gpus_per_domain = s->gpus_per_domain;
    d->link_kind = star_link_kind;
}
