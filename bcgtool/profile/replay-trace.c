/*
 * replay-trace.c - a replay's items on two tracks: the host issuing them
 * (its clock) and the device running them (the backend's time stamps:
 * CUDA events on cuda, the host clock on the host backend).
 *
 * CUDA events are only relative to each other, so each GPU step is placed
 * where the host finished issuing it: in the busy pass the stream is held
 * until then, so the GPU starts it no earlier. The host backend runs each
 * item as it issues it: its device steps start with the host's. The
 * first item's interval on the device also holds the step's feeds.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "replay-trace.h"
#include "trace.h"

int replay_write_trace(const char *path, const struct replay_result *r, char *msg, size_t len)
{
	const struct replay_trace *t = &r->stats.trace;
	uint32_t w = t->nitems + 1;
	struct trace_writer *tw;
	uint64_t origin;
	double dev_free = 0.0;
	int host = strcmp(r->backend, "cuda") != 0;
	char name[320], step_name[48];

	if (t->nsteps == 0) {
		snprintf(msg, len, "no item was time-stamped (more than 256 items?)");
		return -1;
	}
	origin = t->host_ns[0];
	if ((tw = trace_open(path, msg, len)) == NULL)
		return -1;
	trace_name(tw, 1, -1, "host", 1);
	trace_name(tw, 1, 1, "issue (host clock)", 1);
	snprintf(name, sizeof name, "%s%s%s", strcmp(r->backend, "cuda") == 0 ? "GPU" : "device",
	         r->device[0] ? ": " : "", r->device);
	trace_name(tw, 2, -1, name, 2);
	trace_name(tw, 2, 1, strcmp(r->backend, "cuda") == 0 ? "items (CUDA events)"
	                                                     : "items (host backend clock)", 1);
	for (uint32_t s = 0; s < t->nsteps; s++) {
		const uint64_t *h = &t->host_ns[(size_t)s * w];
		const double *d = &t->dev_ms[(size_t)s * w];
		/* The host backend runs the items as it issues them. */
		double start = (double)((host ? h[0] : h[t->nitems]) - origin);
		struct trace_arg args[2] = {
			{ .key = "step", .v = (double)t->step[s] },
			{ .key = "tokens", .v = (double)r->run_tokens },
		};

		snprintf(step_name, sizeof step_name, "step %llu", (unsigned long long)t->step[s]);
		trace_event(tw, 1, 1, step_name, "step", (double)(h[0] - origin),
		            (double)(h[t->nitems] - h[0]), args, 2);
		if (start < dev_free)
			start = dev_free;
		trace_event(tw, 2, 1, step_name, "step", start, d[t->nitems] * 1e6, args, 2);
		for (uint32_t i = 0; i < t->nitems; i++) {
			const char *cat = t->kinds[i] == PLAN_ITEM_SEGMENT ? "segment" : "break";
			struct trace_arg a = { .key = "item", .v = i };
			trace_event(tw, 1, 1, t->labels[i], cat, (double)(h[i] - origin),
			            (double)(h[i + 1] - h[i]), &a, 1);
			trace_event(tw, 2, 1, t->labels[i], cat, start + d[i] * 1e6,
			            (d[i + 1] - d[i]) * 1e6, &a, 1);
		}
		dev_free = start + d[t->nitems] * 1e6;
	}
	return trace_close(tw, msg, len);
}
