/* print_calibrate.c - the report of one FLOP-efficiency fit (calibrate.h), for validate --calibrate;
 * the fit itself is model_calibrate_fit (computed by commands/cmd_validate.c). */
#include "calibrate.h"
#include "output.h"

static void errors_line(FILE *out, const char *label, double eff, const model_calibrate_errors_t *e) {
    fprintf(out, "    %-28s %10.3f %12.2f %% %11.2f %% %9.2f %%\n", label, eff, e->mean_abs_pct,
            e->max_abs_pct, e->rms_pct);
}

void calib_print_text(FILE *out, const char *system, const model_calibration_t *fit,
                      const char *const *names) {
    fprintf(out, "\n  %s, %zu runs (%s):\n  %40s %14s %13s %11s\n", system, fit->n,
            fit->fp8 ? "fp8_flop_efficiency, FP8 GEMMs" : "flop_efficiency", "efficiency", "mean abs err",
            "max abs err", "rms err");
    errors_line(out, "as read", fit->current_efficiency, &fit->current);
    errors_line(out, "fitted (least squares)", fit->best_efficiency, &fit->best);
    if (fit->at_edge)
        fprintf(out,
                "    the fit is at an end of the grid: the efficiency alone cannot explain these runs\n");
    if (!fit->loo_valid) {
        fprintf(out, "    leave-one-out: needs at least two runs\n");
        return;
    }
    fprintf(out, "    leave-one-out (each run predicted with the efficiency fitted to the others):\n");
    for (size_t i = 0; i < fit->n; i++)
        fprintf(out, "      %-24.24s %10.3f %+12.2f %%\n", names[i], fit->loo_efficiency[i],
                fit->loo_error_pct[i]);
    fprintf(out, "    %-28s %10s %12.2f %% %11.2f %% %9.2f %%\n", "leave-one-out", "", fit->loo.mean_abs_pct,
            fit->loo.max_abs_pct, fit->loo.rms_pct);
}

static const char *constant_of(const model_calibration_t *fit) {
    return fit->fp8 ? "fp8_flop_efficiency" : "flop_efficiency";
}

static void errors_json(json_writer_t *w, const char *key, const char *constant, double eff,
                        const model_calibrate_errors_t *e) {
    json_open_object(w, key);
    if (eff > 0.0)
        json_number(w, constant, eff);
    json_number(w, "mean_abs_error_pct", e->mean_abs_pct);
    json_number(w, "max_abs_error_pct", e->max_abs_pct);
    json_number(w, "rms_error_pct", e->rms_pct);
    json_close_object(w);
}

struct cJSON *calib_json(const char *system, const model_calibration_t *fit, const char *const *names) {
    json_writer_t w;
    json_start(&w, NULL);
    json_string(&w, "system", system);
    json_int(&w, "runs", (int64_t)fit->n);
    json_string(&w, "constant", constant_of(fit));
    errors_json(&w, "as_read", constant_of(fit), fit->current_efficiency, &fit->current);
    errors_json(&w, "fitted", constant_of(fit), fit->best_efficiency, &fit->best);
    json_bool(&w, "at_grid_edge", fit->at_edge);
    if (fit->loo_valid) {
        errors_json(&w, "leave_one_out", constant_of(fit), 0.0, &fit->loo);
        json_open_array(&w, "leave_one_out_rows");
        for (size_t i = 0; i < fit->n; i++) {
            json_open_object(&w, NULL);
            json_string(&w, "name", names[i]);
            json_number(&w, constant_of(fit), fit->loo_efficiency[i]);
            json_number(&w, "error_pct", fit->loo_error_pct[i]);
            json_close_object(&w);
        }
        json_close_array(&w);
    }
    return json_take(&w);
}
