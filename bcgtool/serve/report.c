/*
 * serve/report.c - the statistics of a trace run, as text and as JSON.
 *
 * The dispatch table follows vLLM's: one row per (unpadded tokens, padded
 * tokens, mode) with the padding and the number of steps.
 */
#include "config.h"

#include <inttypes.h>

#include "plan.h"
#include "serve/report.h"

static const int report_modes[] = { PLAN_MODE_FULL, PLAN_MODE_BREAKABLE, PLAN_MODE_EAGER };

static void trace_sums(const struct serve_trace *t, uint64_t *prompt, uint64_t *output)
{
	*prompt = *output = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		*prompt += t->req[i].prompt_len;
		*output += t->req[i].output_len;
	}
}

void serve_report_setup(FILE *f, const char *trace_name, const struct serve_trace *t,
                        const struct serve_sched_opts *o)
{
	uint64_t prompt, output;

	trace_sums(t, &prompt, &output);
	fprintf(f, "trace        %s: %" PRIu32 " requests, %" PRIu64 " prompt and %" PRIu64
	        " output tokens\n", trace_name, t->n, prompt, output);
	fprintf(f, "scheduler    budget %" PRIu32 " tokens, %" PRIu32 " requests, chunk %" PRIu32
	        ", %" PRIu32 " %sblocks of %" PRIu32 " (%" PRIu32 " a request), a step %" PRIu64
	        " us\n", o->token_budget, o->max_reqs, o->chunk ? o->chunk : o->token_budget,
	        o->num_blocks, o->modelled ? "modelled " : "", o->block_size, o->max_blocks,
	        o->step_us);

}

void serve_report_text(FILE *f, const struct serve_result *r, int policy)
{
	const struct serve_dispatch *d = &r->disp;

	fprintf(f, "policy       %s\n", serve_policy_name(policy));
	fprintf(f, "steps        %" PRIu64 " (%" PRIu64 " preemptions; at most %" PRIu32
	        " requests, %" PRIu32 " tokens a batch)\n", r->sched.steps, r->sched.preemptions,
	        r->sched.max_reqs, r->sched.max_tokens);
	fprintf(f, "\n%-12s %10s %10s %10s %10s %10s\n", "", "median", "p90", "p99", "mean", "max");
	fprintf(f, "%-12s %7.3f ms %7.3f ms %7.3f ms %7.3f ms %7.3f ms\n", "step", r->step_median,
	        r->step_p90, r->step_p99, r->step_mean, r->step_max);
	fprintf(f, "\n%-12s %.1f output tokens/s, %.1f batch tokens/s (%.3f ms in all)\n",
	        "throughput", r->output_per_s, r->tokens_per_s, r->total_ms);
	fprintf(f, "%-12s %.1f%% of padded tokens (%" PRIu64 " of %" PRIu64 ")\n", "padding",
	        100.0 * serve_dispatch_waste(d), d->padded_tokens - d->unpadded_tokens,
	        d->padded_tokens);
	fprintf(f, "\n%-10s %8s %7s %12s\n", "mode", "steps", "share", "time");
	for (size_t i = 0; i < sizeof report_modes / sizeof report_modes[0]; i++) {
		int m = report_modes[i];
		fprintf(f, "%-10s %8" PRIu64 " %6.1f%% %9.3f ms\n", plan_mode_name(m), d->mode_steps[m],
		        d->steps ? 100.0 * (double)d->mode_steps[m] / (double)d->steps : 0.0,
		        r->mode_ms[m]);
	}
	fprintf(f, "\n%8s %8s %8s  %-10s %8s\n", "unpadded", "padded", "paddings", "mode", "count");
	for (uint32_t i = 0; i < d->nrows; i++) {
		const struct serve_dispatch_row *w = &d->rows[i];
		fprintf(f, "%8" PRIu32 " %8" PRIu32 " %8" PRIu32 "  %-10s %8" PRIu64 "\n", w->unpadded,
		        w->padded, w->padded - w->unpadded, plan_mode_name(w->mode), w->count);
	}
	if (r->checked) {
		fputc('\n', f);
		char text[320];
		stash_verdict_text(&r->check, text, sizeof text);
		fprintf(f, "check        %s\n", text);
	}
}

void serve_report_json_setup(struct plan_json *j, const char *trace_name,
                             const struct serve_trace *t, const struct serve_sched_opts *o)
{
	uint64_t prompt, output;

	trace_sums(t, &prompt, &output);
	plan_json_key(j, "trace");
	plan_json_object_begin(j);
	plan_json_key(j, "name");
	plan_json_string(j, trace_name);
	plan_json_key(j, "requests");
	plan_json_uint(j, t->n);
	plan_json_key(j, "prompt_tokens");
	plan_json_uint(j, prompt);
	plan_json_key(j, "output_tokens");
	plan_json_uint(j, output);
	plan_json_object_end(j);
	plan_json_key(j, "scheduler");
	plan_json_object_begin(j);
	plan_json_key(j, "budget");
	plan_json_uint(j, o->token_budget);
	plan_json_key(j, "requests");
	plan_json_uint(j, o->max_reqs);
	plan_json_key(j, "chunk");
	plan_json_uint(j, o->chunk ? o->chunk : o->token_budget);
	plan_json_key(j, "blocks");
	plan_json_uint(j, o->num_blocks);
	plan_json_key(j, "block_size");
	plan_json_uint(j, o->block_size);
	plan_json_key(j, "max_blocks");
	plan_json_uint(j, o->max_blocks);
	plan_json_key(j, "step_us");
	plan_json_uint(j, o->step_us);
	plan_json_object_end(j);
	plan_json_key(j, "modelled");
	plan_json_bool(j, o->modelled);
}

void serve_report_json(struct plan_json *j, const struct serve_result *r, int policy)
{
	const struct serve_dispatch *d = &r->disp;

	plan_json_key(j, "policy");
	plan_json_string(j, serve_policy_name(policy));
	plan_json_key(j, "steps");
	plan_json_uint(j, r->sched.steps);
	plan_json_key(j, "preemptions");
	plan_json_uint(j, r->sched.preemptions);
	plan_json_key(j, "max_batch_requests");
	plan_json_uint(j, r->sched.max_reqs);
	plan_json_key(j, "max_batch_tokens");
	plan_json_uint(j, r->sched.max_tokens);
	plan_json_key(j, "generated_tokens");
	plan_json_uint(j, r->sched.generated);
	plan_json_key(j, "step_ms");
	plan_json_object_begin(j);
	plan_json_key(j, "median");
	plan_json_double(j, r->step_median);
	plan_json_key(j, "p90");
	plan_json_double(j, r->step_p90);
	plan_json_key(j, "p99");
	plan_json_double(j, r->step_p99);
	plan_json_key(j, "mean");
	plan_json_double(j, r->step_mean);
	plan_json_key(j, "max");
	plan_json_double(j, r->step_max);
	plan_json_object_end(j);
	plan_json_key(j, "total_ms");
	plan_json_double(j, r->total_ms);
	plan_json_key(j, "output_tokens_per_s");
	plan_json_double(j, r->output_per_s);
	plan_json_key(j, "batch_tokens_per_s");
	plan_json_double(j, r->tokens_per_s);
	plan_json_key(j, "unpadded_tokens");
	plan_json_uint(j, d->unpadded_tokens);
	plan_json_key(j, "padded_tokens");
	plan_json_uint(j, d->padded_tokens);
	plan_json_key(j, "padding_waste");
	plan_json_double(j, serve_dispatch_waste(d));
	plan_json_key(j, "modes");
	plan_json_object_begin(j);
	for (size_t i = 0; i < sizeof report_modes / sizeof report_modes[0]; i++) {
		int m = report_modes[i];
		plan_json_key(j, plan_mode_name(m));
		plan_json_object_begin(j);
		plan_json_key(j, "steps");
		plan_json_uint(j, d->mode_steps[m]);
		plan_json_key(j, "share");
		plan_json_double(j, d->steps ? (double)d->mode_steps[m] / (double)d->steps : 0.0);
		plan_json_key(j, "ms");
		plan_json_double(j, r->mode_ms[m]);
		plan_json_object_end(j);
	}
	plan_json_object_end(j);
	plan_json_key(j, "dispatch");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < d->nrows; i++) {
		const struct serve_dispatch_row *w = &d->rows[i];
		plan_json_object_begin(j);
		plan_json_key(j, "unpadded");
		plan_json_uint(j, w->unpadded);
		plan_json_key(j, "padded");
		plan_json_uint(j, w->padded);
		plan_json_key(j, "paddings");
		plan_json_uint(j, w->padded - w->unpadded);
		plan_json_key(j, "mode");
		plan_json_string(j, plan_mode_name(w->mode));
		plan_json_key(j, "count");
		plan_json_uint(j, w->count);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "check");
	if (!r->checked) {
		plan_json_null(j);
	} else {
		stash_verdict_json(j, &r->check);
	}
}
