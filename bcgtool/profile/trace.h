/*
 * trace.h - a Chrome trace event file (the JSON object form), which
 * ui.perfetto.dev and chrome://tracing open: complete events ("ph": "X")
 * with microsecond times on numbered process and thread tracks, and
 * metadata events that name the tracks. Written atomically.
 */
#ifndef BCG_PROFILE_TRACE_H
#define BCG_PROFILE_TRACE_H

#include <stddef.h>
#include <stdint.h>

struct trace_writer;

/* An event argument: a string when S is not NULL, else the number V. */
struct trace_arg {
	const char *key;
	const char *s;
	double      v;
};

struct trace_writer *trace_open(const char *path, char *msg, size_t len);

/* Name process PID (TID < 0) or thread TID of PID; SORT orders the tracks. */
void trace_name(struct trace_writer *w, int pid, int tid, const char *name, int sort);

/* A complete event from TS_NS for DUR_NS nanoseconds (written in
 * microseconds, as the format wants). */
void trace_event(struct trace_writer *w, int pid, int tid, const char *name, const char *cat,
                 double ts_ns, double dur_ns, const struct trace_arg *args, size_t nargs);

/* Finish and rename into place. 0, or -1 with the reason in MSG. */
int trace_close(struct trace_writer *w, char *msg, size_t len);
void trace_abort(struct trace_writer *w);

#endif /* BCG_PROFILE_TRACE_H */
