/*
 * trace.c - Chrome trace event files (see trace.h).
 */
#include "config.h"

#include <stdlib.h>

#include "plan.h"
#include "trace.h"
#include "util.h"

struct trace_writer {
	struct bcg_output out;
	struct plan_json *j;
};

struct trace_writer *trace_open(const char *path, char *msg, size_t len)
{
	struct trace_writer *w = xcalloc(1, sizeof *w);

	if (bcg_output_try_open(&w->out, path, 1, msg, len) != 0) {
		free(w);
		return NULL;
	}
	if ((w->j = plan_json_new(w->out.f)) == NULL) {
		snprintf(msg, len, "out of memory");
		bcg_output_abort(&w->out);
		free(w);
		return NULL;
	}
	plan_json_object_begin(w->j);
	plan_json_key(w->j, "displayTimeUnit");
	plan_json_string(w->j, "ns");
	plan_json_key(w->j, "traceEvents");
	plan_json_array_begin(w->j);
	return w;
}

static void meta(struct trace_writer *w, int pid, int tid, const char *what, const char *key,
                 const char *s, int64_t v)
{
	plan_json_object_begin(w->j);
	plan_json_key(w->j, "ph");
	plan_json_string(w->j, "M");
	plan_json_key(w->j, "name");
	plan_json_string(w->j, what);
	plan_json_key(w->j, "pid");
	plan_json_int(w->j, pid);
	plan_json_key(w->j, "tid");
	plan_json_int(w->j, tid < 0 ? 0 : tid);
	plan_json_key(w->j, "args");
	plan_json_object_begin(w->j);
	plan_json_key(w->j, key);
	if (s != NULL)
		plan_json_string(w->j, s);
	else
		plan_json_int(w->j, v);
	plan_json_object_end(w->j);
	plan_json_object_end(w->j);
}

void trace_name(struct trace_writer *w, int pid, int tid, const char *name, int sort)
{
	if (tid < 0) {
		meta(w, pid, tid, "process_name", "name", name, 0);
		meta(w, pid, tid, "process_sort_index", "sort_index", NULL, sort);
	} else {
		meta(w, pid, tid, "thread_name", "name", name, 0);
		meta(w, pid, tid, "thread_sort_index", "sort_index", NULL, sort);
	}
}

void trace_event(struct trace_writer *w, int pid, int tid, const char *name, const char *cat,
                 double ts_ns, double dur_ns, const struct trace_arg *args, size_t nargs)
{
	plan_json_object_begin(w->j);
	plan_json_key(w->j, "name");
	plan_json_string(w->j, name);
	plan_json_key(w->j, "cat");
	plan_json_string(w->j, cat);
	plan_json_key(w->j, "ph");
	plan_json_string(w->j, "X");
	plan_json_key(w->j, "ts");
	plan_json_double(w->j, ts_ns / 1000.0);
	plan_json_key(w->j, "dur");
	plan_json_double(w->j, dur_ns > 0 ? dur_ns / 1000.0 : 0.0);
	plan_json_key(w->j, "pid");
	plan_json_int(w->j, pid);
	plan_json_key(w->j, "tid");
	plan_json_int(w->j, tid);
	if (nargs > 0) {
		plan_json_key(w->j, "args");
		plan_json_object_begin(w->j);
		for (size_t i = 0; i < nargs; i++) {
			plan_json_key(w->j, args[i].key);
			if (args[i].s != NULL)
				plan_json_string(w->j, args[i].s);
			else
				plan_json_double(w->j, args[i].v);
		}
		plan_json_object_end(w->j);
	}
	plan_json_object_end(w->j);
}

void trace_abort(struct trace_writer *w)
{
	if (w == NULL)
		return;
	plan_json_free(w->j);
	bcg_output_abort(&w->out);
	free(w);
}

int trace_close(struct trace_writer *w, char *msg, size_t len)
{
	int rc;

	plan_json_array_end(w->j);
	plan_json_object_end(w->j);
	plan_json_free(w->j);
	rc = bcg_output_try_commit(&w->out, NULL, 0, msg, len);
	free(w);
	return rc;
}
