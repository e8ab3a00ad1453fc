/*
 * serve/trace.h - request traces: what a server is asked to do.
 *
 * A trace is a list of requests, each with an id, an arrival time, a
 * prompt length and an output length, in arrival order. It comes from a
 * JSON Lines file (formats/trace.md) or from the synthetic generator, whose
 * SPEC names an arrival rate, the length distributions and a seed; the
 * same SPEC gives the same trace on every machine.
 */
#ifndef BCG_SERVE_TRACE_H
#define BCG_SERVE_TRACE_H

#include <stdint.h>
#include <stdio.h>

/* The longest prompt or output a trace may ask for. */
#define SERVE_MAX_LEN (1u << 20)

struct serve_request {
	uint64_t id;
	uint64_t arrival_us;   /* microseconds after the trace's start */
	uint32_t prompt_len;   /* tokens of prompt, >= 1 */
	uint32_t output_len;   /* tokens to generate, >= 1 */
};

struct serve_trace {
	uint32_t              n;
	struct serve_request *req;    /* n, sorted by arrival (stable) */
};

/* Where and why reading failed: LINE and COL are 1-based, 0 when the
 * message concerns no position (then it may concern the whole file). */
struct serve_diag {
	unsigned line;
	unsigned col;
	char     msg[256];
};

/* Parse the JSON Lines text DATA (LEN bytes) into T. On error fill DIAG
 * and return -1 (T is left empty). Out of memory is an error too, with the
 * message "out of memory". */
int serve_trace_parse(const char *data, size_t len, struct serve_trace *t,
                      struct serve_diag *diag);

/* Read and parse the file at PATH (line 0 in DIAG: the file could not be
 * read, the message says why). */
int serve_trace_read(const char *path, struct serve_trace *t, struct serve_diag *diag);

/* A length distribution of the synthetic generator. */
enum serve_dist_kind {
	SERVE_DIST_FIXED,      /* always a */
	SERVE_DIST_UNIFORM,    /* a..b inclusive */
	SERVE_DIST_EXP,        /* 1 + exponential of mean a - 1, at most b */
};

struct serve_dist {
	int      kind;
	uint32_t a;
	uint32_t b;
};

struct serve_synth {
	uint32_t          requests;
	double            rate;     /* requests per second; 0: all at time 0 */
	struct serve_dist prompt;
	struct serve_dist output;
	uint64_t          seed;
};

/* Parse SPEC, "key=value,key=value" (formats/trace.md): requests, rate,
 * prompt, output, seed; the keys not given keep S's values. On error
 * write the reason to WHY and return -1. */
int serve_synth_parse(const char *spec, struct serve_synth *s, char *why, size_t whylen);

/* The defaults serve_synth_parse() starts from. */
void serve_synth_defaults(struct serve_synth *s);

/* Generate S's trace: ids 0..n-1 in arrival order. -1 out of memory. */
int serve_trace_synthesize(const struct serve_synth *s, struct serve_trace *t);

/* Write T as JSON Lines to F; -1 when the writing failed. */
int serve_trace_write(FILE *f, const struct serve_trace *t);

void serve_trace_release(struct serve_trace *t);

#endif /* BCG_SERVE_TRACE_H */
