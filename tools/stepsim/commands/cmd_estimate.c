/* cmd_estimate.c - `stepsim estimate`: one configuration through the closed-form model (printed by
 * output/print_estimate.c). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "commands.h"
#include "print.h"

/* Resolve the scenario and evaluate it; on CLI_OK *e is allocated (caller frees). */
static int estimate_run(scenario_t *scn, model_job_t *job, model_estimate_t **e, cli_diag_t *diag) {
    int rc = scenario_resolve(scn, job, diag);
    if (rc)
        return rc;
    *e = alloc_calloc(1, sizeof **e);
    if (!*e)
        return cli_fail(diag, CLI_ERUNTIME, "out of memory");
    if (model_estimate(job, *e) != MODEL_OK) {
        free(*e);
        *e = NULL;
        return cli_fail(diag, CLI_EUSAGE,
                        "%s%sthe model rejected this configuration; allowed: a job that passes "
                        "model_job_check",
                        scn->file, scn->file[0] ? ": " : "");
    }
    if ((rc = cmd_require_finite_estimate(*e, job, NULL, diag)) != CLI_OK) {
        free(*e);
        *e = NULL;
    }
    return rc;
}

int cmd_estimate_compute(scenario_t *scn, estimate_result_t *r, cli_diag_t *diag) {
    memset(r, 0, sizeof *r);
    r->scn = scn;
    return estimate_run(scn, &r->job, &r->est, diag);
}

void estimate_result_destroy(estimate_result_t *r) {
    free(r->est);
    r->est = NULL;
}

int cmd_estimate(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag) {
    estimate_result_t r;
    int rc = cmd_estimate_compute(scn, &r, diag);
    if (rc)
        return rc;
    if (print_estimate(out, &r, opts) != 0)
        rc = cli_fail(diag, CLI_ERUNTIME, "out of memory while printing the JSON result");
    estimate_result_destroy(&r);
    return rc;
}
