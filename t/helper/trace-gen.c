/*
 * trace-gen - write the synthetic trace of SPEC (formats/trace.md) as JSON
 * Lines on stdout: how samples/traces/ were made, and how t3600 checks
 * that they are made the same way on every machine.
 */
#include "config.h"

#include <stdio.h>

#include "serve/trace.h"

int main(int argc, char **argv)
{
	struct serve_synth s;
	struct serve_trace t;
	char why[256];

	if (argc != 2) {
		fprintf(stderr, "usage: trace-gen SPEC\n");
		return 2;
	}
	serve_synth_defaults(&s);
	if (serve_synth_parse(argv[1], &s, why, sizeof why) != 0) {
		fprintf(stderr, "trace-gen: %s\n", why);
		return 2;
	}
	if (serve_trace_synthesize(&s, &t) != 0) {
		fprintf(stderr, "trace-gen: out of memory\n");
		return 3;
	}
	if (serve_trace_write(stdout, &t) != 0 || fflush(stdout) != 0) {
		serve_trace_release(&t);
		return 3;
	}
	serve_trace_release(&t);
	return 0;
}
