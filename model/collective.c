/* collective.c - the published two-tier (NVLink + IB) ring model of a collective's time
 * (docs/model-formulas.md, section 4.2), kept with its quirks, and the dispatch between compat modes. */
#include <math.h>

#include "model_internal.h"

const char *model_coll_op_name(model_coll_op_t op) {
    switch (op) {
    case MODEL_COLL_ALLREDUCE:
        return "allreduce";
    case MODEL_COLL_ALLGATHER:
        return "allgather";
    case MODEL_COLL_REDUCESCATTER:
        return "reducescatter";
    case MODEL_COLL_BROADCAST:
        return "broadcast";
    case MODEL_COLL_REDUCE:
        return "reduce";
    case MODEL_COLL_P2P:
        return "p2p";
    case MODEL_COLL_ALLTOALL:
        return "alltoall";
    case MODEL_COLL_NONE:
        break;
    }
    return "none";
}

/* Quirk 3 (docs/model-formulas.md, section 12): allreduce costs the same as an allgather unless the group
 * spans several NVLink domains with more than one member in each. */
double model_i_collective_reference_s(const model_system_t *sys, model_coll_op_t op, double volume_gb,
                                      int64_t n, int64_t per_domain) {
    if (volume_gb == 0.0 || isnan(volume_gb) || n <= 1 || op == MODEL_COLL_NONE)
        return 0.0;
    const double fast_gb_per_s = sys->nvlink_gb_per_s * sys->nvlink_eff;
    const double slow_gb_per_s = sys->ib_gb_per_s * sys->ib_eff;
    const double fast_lat_s = sys->nvlink_latency_s, slow_lat_s = sys->ib_latency_s;
    const int64_t t = per_domain < 1 ? 1 : per_domain;
    const int64_t nodes = n / t;

    if (op == MODEL_COLL_P2P)
        return t == 1 ? slow_lat_s + volume_gb / slow_gb_per_s : fast_lat_s + volume_gb / fast_gb_per_s;

    const int ring =
        op == MODEL_COLL_ALLREDUCE || op == MODEL_COLL_ALLGATHER || op == MODEL_COLL_REDUCESCATTER;
    const double c = ring ? (double)(n - 1) / (double)n : 1.0;
    if (t == 1)
        return slow_lat_s * (double)(n - 1) + c * volume_gb / slow_gb_per_s;
    if (nodes == 1)
        return fast_lat_s * (double)(n - 1) + c * volume_gb / fast_gb_per_s;

    const double rings = (double)sys->nic_factor * (double)t; /* no int64 product of input */
    double bw_s = fmax(c * volume_gb / (rings * slow_gb_per_s), c * volume_gb / fast_gb_per_s);
    if (op == MODEL_COLL_ALLREDUCE)
        bw_s *= 2.0;
    return bw_s + slow_lat_s * (double)(nodes - 1) + fast_lat_s * (double)(n - nodes);
}

double model_collective_time_s(const model_system_t *sys, model_compat_t compat, model_coll_op_t op,
                               double volume_gb, int64_t group_size, int64_t per_domain) {
    if (compat == MODEL_COMPAT_REFERENCE && op != MODEL_COLL_ALLTOALL) /* the reference has no alltoall */
        return model_i_collective_reference_s(sys, op, volume_gb, group_size, per_domain);
    return model_i_collective_corrected_s(sys, op, volume_gb, group_size, per_domain);
}
