/*
 * record-gen - write a synthetic recorded plan (format 1.4), built through
 * the libplan API as `bcgtool record` would build one, for the CLI tests
 * of inspect, diff and validate on recorded plans. The plan is
 * t/unit/plan-sample.c's sample_recorded(), whose fields
 * formats/plan-format.md lists ("The recorded vector"), with changes:
 *
 *   record-gen [--layers N] [--rename] [--move-break] [--module-changed]
 *              [--grid] [--one-variant] OUT
 *
 *   --layers N        layers (rmsnorm then matmul) in "prefill_step"'s
 *                     graph, 1 to 16 (default 2)
 *   --rename          matmul's template argument 128 becomes 256
 *   --move-break      the library GEMM runs before the graph in
 *                     "decode_step", not after it
 *   --module-changed  a byte of module 0's image differs (its hash too)
 *   --grid            rmsnorm's grid in "decode_step" is 32, not 16
 *   --one-variant     no "prefill_step"
 *
 * Exit status 0, or 2 on a usage or build error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan-sample.h"

int main(int argc, char **argv)
{
	struct sample_rec_opts o = { .layers = 2 };
	struct plan_diag d = { 0 };
	const char *out = NULL;
	plan_t *p;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc)
			o.layers = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--rename") == 0)
			o.rename = 1;
		else if (strcmp(argv[i], "--move-break") == 0)
			o.move_break = 1;
		else if (strcmp(argv[i], "--module-changed") == 0)
			o.module_changed = 1;
		else if (strcmp(argv[i], "--grid") == 0)
			o.grid = 1;
		else if (strcmp(argv[i], "--one-variant") == 0)
			o.one_variant = 1;
		else if (argv[i][0] != '-' && out == NULL)
			out = argv[i];
		else {
			fprintf(stderr, "record-gen: bad argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (out == NULL) {
		fprintf(stderr, "usage: record-gen [--layers N] [--rename] [--move-break] "
		        "[--module-changed] [--grid] [--one-variant] OUT\n");
		return 2;
	}
	if ((p = sample_recorded_ex(&o)) == NULL) {
		fprintf(stderr, "record-gen: the plan could not be built\n");
		return 2;
	}
	if (plan_write_file(p, out, &d) != 0) {
		fprintf(stderr, "record-gen: %s: %s\n", out, d.message);
		plan_free(p);
		return 2;
	}
	plan_free(p);
	return 0;
}
