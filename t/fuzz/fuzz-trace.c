/*
 * fuzz-trace.c - a libFuzzer target for the request trace reader (JSON
 * Lines, formats/trace.md).
 *
 * A failure must say why, leave the trace empty, and point inside the
 * input (a line that exists, or none). A trace that parses must hold
 * what the format promises: lengths from 1 to SERVE_MAX_LEN, requests in
 * arrival order; and it must write back as JSON Lines that parse to the
 * same requests.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/trace.h"
#include "fuzz.h"

/* Lines of the input: the most a diagnosis may name. */
static unsigned fuzz_trace_lines(const uint8_t *data, size_t size)
{
	unsigned n = 1;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct serve_trace t, back;
	struct serve_diag diag;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	memset(&diag, 0, sizeof diag);
	if (serve_trace_parse((const char *)data, size, &t, &diag) != 0) {
		if (diag.msg[0] == '\0' || t.n != 0 || t.req != NULL ||
		    diag.line > fuzz_trace_lines(data, size))
			abort();
		return 0;
	}
	for (uint32_t i = 0; i < t.n; i++) {
		const struct serve_request *q = &t.req[i];
		if (q->prompt_len < 1 || q->prompt_len > SERVE_MAX_LEN || q->output_len < 1 ||
		    q->output_len > SERVE_MAX_LEN)
			abort();
		if (i > 0 && q->arrival_us < t.req[i - 1].arrival_us)
			abort();
	}
	/* Written back, it reads as the same requests. */
	if ((f = open_memstream(&text, &len)) == NULL)
		abort();
	if (serve_trace_write(f, &t) != 0 || fclose(f) != 0)
		abort();
	if (serve_trace_parse(text, len, &back, &diag) != 0 || back.n != t.n ||
	    (t.n > 0 && memcmp(back.req, t.req, t.n * sizeof *t.req) != 0))
		abort();
	serve_trace_release(&back);
	serve_trace_release(&t);
	free(text);
	return 0;
}
