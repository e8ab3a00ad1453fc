/*
 * cmd-report.c - bcgtool report: attribute every kernel of an Nsight
 * Systems profile of `bcgtool replay` to the plan's ops, segments and
 * breakpoints, and say what each costs and where the GPU idles.
 *
 * The join itself lives in profile/ (attrib.c); this file is the command
 * line. A tensor-parallel plan takes one report per rank, rank 0's first,
 * the plan last: REPORT... PLAN.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "profile/run.h"
#include "util.h"

static int cmd_report_exec(int argc, char **argv);

#define REPORT_OPTIONS \
	"  -t, --tokens T       the variant replayed (default: the one whose items and\n" \
	"                       launch shapes the report matches best)\n" \
	"      --top N          rows of the op, step and unattributed tables\n" \
	"                       (default 10)\n" \
	"      --json           print JSON (formats/report-json.md) instead of tables\n" \
	"      --svg FILE       write an SVG timeline of one step\n" \
	"      --step K         the step of --svg, counted from 0 among the report's\n" \
	"                       steps of the plan (default: the one of median GPU span)\n" \
	"      --trace-json FILE  write the steps as a Chrome trace (ui.perfetto.dev)\n" \
	"      --nsys PATH      the nsys that exports an .nsys-rep (default: $BCG_NSYS,\n" \
	"                       PATH, /opt/nvidia, /usr/local/cuda*)\n"

const struct cmd_entry cmd_report_entry = {
	.name = "report",
	.usage = "[--tokens T] [--top N] [--json] [--svg FILE [--step K]] [--trace-json FILE] "
	         "[--nsys PATH] REPORT... PLAN",
	.summary = "attribute the kernels of an Nsight Systems profile to a plan's ops",
	.options = REPORT_OPTIONS
		"  -h, --help           show this help\n"
		"A tensor-parallel plan takes one report per rank, rank 0's first, each of\n"
		"that rank's replay (NVTX steps \"rank R step N\").\n",
	.exec = cmd_report_exec,
};

int cmd_report_option(const struct cmd_entry *self, int c, struct report_opts *o)
{
	long long v;

	switch (c) {
	case 't':
		if (cmd_parse_int(self, "--tokens", optarg, 1, 1 << 20, &v) != 0)
			return -1;
		o->tokens = v;
		return 0;
	case 'T':
		if (cmd_parse_int(self, "--top", optarg, 1, 1000000, &v) != 0)
			return -1;
		o->top = (unsigned)v;
		return 0;
	case 'J': o->json = 1; return 0;
	case 'S': o->svg = optarg; return 0;
	case 'K':
		if (cmd_parse_int(self, "--step", optarg, 0, 100000000, &v) != 0)
			return -1;
		o->step = v;
		return 0;
	case 'R': o->trace = optarg; return 0;
	case 'N': o->nsys = optarg; return 0;
	default: return 1;
	}
}

/* What a file is, by its first bytes: 'p' a plan (its magic number,
 * formats/plan-format.md), 'r' a report (an SQLite export, or an
 * .nsys-rep by name), 0 neither or unreadable. */
static int report_file_kind(const char *path)
{
	static const char plan_magic[8] = { '\x89', 'B', 'C', 'G', '\r', '\n', '\x1a', '\n' };
	static const char sqlite_magic[16] = "SQLite format 3";
	char head[16] = { 0 };
	size_t n = strlen(path), got = 0;
	FILE *f = fopen(path, "rb");

	if (f != NULL) {
		got = fread(head, 1, sizeof head, f);
		fclose(f);
	}
	if (got >= sizeof plan_magic && memcmp(head, plan_magic, sizeof plan_magic) == 0)
		return 'p';
	if (got == sizeof head && memcmp(head, sqlite_magic, sizeof sqlite_magic) == 0)
		return 'r';
	if (n > 9 && strcmp(path + n - 9, ".nsys-rep") == 0)
		return 'r';
	return 0;
}

static int cmd_report_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tokens", required_argument, NULL, 't' },
		{ "top", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'J' },
		{ "svg", required_argument, NULL, 'S' },
		{ "step", required_argument, NULL, 'K' },
		{ "trace-json", required_argument, NULL, 'R' },
		{ "nsys", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_report_entry;
	struct report_opts o = { .top = 10, .step = -1 };
	int c;

	while ((c = cmd_getopt(self, argc, argv, "t:h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		if (c == CMD_BAD)
			return BCG_EXIT_USAGE;
		if (cmd_report_option(self, c, &o) != 0)
			return BCG_EXIT_USAGE;
	}
	if (argc - optind < 2)
		return cmd_usage_error(self, "a report and a plan are needed");
	if (o.step >= 0 && o.svg == NULL)
		return cmd_usage_error(self, "--step picks the step of --svg: give --svg FILE");
	if (argc - optind == 2 && report_file_kind(argv[optind]) == 'p' &&
	    report_file_kind(argv[optind + 1]) == 'r')
		return cmd_usage_error(self, "the report comes first, then the plan: bcgtool report "
		                       "%s %s", argv[optind + 1], argv[optind]);
	if (argc - optind == 2)
		return report_run(&o, argv[optind], argv[optind + 1]);
	/* one report per rank of a tensor-parallel plan, the plan last */
	for (int i = optind; i < argc - 1; i++)
		if (report_file_kind(argv[i]) == 'p')
			return cmd_usage_error(self, "%s is a plan: one plan, after the reports (bcgtool "
			                       "report REPORT... PLAN)", argv[i]);
	if (o.svg != NULL || o.trace != NULL)
		return cmd_usage_error(self, "%s draws one rank: give it with one report (of a plan "
		                       "of one rank)", o.svg != NULL ? "--svg" : "--trace-json");
	return report_run_ranks(&o, argv + optind, (uint32_t)(argc - optind - 1), argv[argc - 1]);
}
