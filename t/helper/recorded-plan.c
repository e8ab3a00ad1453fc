/*
 * recorded-plan.c - write the recorded plan of recorded-sample.h to a file,
 * for the CLI tests of instantiate and replay of recorded plans.
 *
 *   recorded-plan [--no-image] [--host-node] [--stray] [--indirect]
 *                 [--foreign] [--offsets] OUT
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "recorded-sample.h"

int main(int argc, char **argv)
{
	struct rs_opts o = { .base = UINT64_C(0x7f2000000000) };
	struct plan_diag d = { 0 };
	char msg[512];
	plan_t *p;
	int i;

	for (i = 1; i < argc - 1; i++) {
		if (strcmp(argv[i], "--no-image") == 0)
			o.no_image = 1;
		else if (strcmp(argv[i], "--host-node") == 0)
			o.host_node = 1;
		else if (strcmp(argv[i], "--stray") == 0)
			o.stray = 1;
		else if (strcmp(argv[i], "--indirect") == 0)
			o.indirect = 1;
		else if (strcmp(argv[i], "--foreign") == 0)
			o.foreign = 1;
		else if (strcmp(argv[i], "--offsets") == 0)
			o.offsets = 1;
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: recorded-plan [--no-image] [--host-node] [--stray] "
		        "[--indirect] [--foreign] [--offsets] OUT\n");
		return 2;
	}
	if ((p = rs_build(&o, msg, sizeof msg)) == NULL) {
		fprintf(stderr, "recorded-plan: %s\n", msg);
		return 1;
	}
	if (plan_write_file(p, argv[i], &d) != 0) {
		fprintf(stderr, "recorded-plan: %s: %s\n", argv[i], d.message);
		plan_free(p);
		return 1;
	}
	plan_free(p);
	return 0;
}
