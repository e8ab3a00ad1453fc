/*
 * cmd-instantiate.c - bcgtool instantiate: rebuild every graph of a plan in
 * this process and check that it matches the one that was captured.
 *
 * Each segment is captured again from its recorded op list, instantiated
 * and uploaded; its nodes are compared with the plan's and reported as a
 * match or a drift with its reason. Drift exits 1 unless --allow-drift.
 * Every variant's executables are held until the end, as a server holds
 * them, so that the device memory they took adds up; with --share-exec,
 * segments of one topology in different variants share one
 * (engine/share.h), and the report says which, and the memory taken.
 * A recorded plan goes to record/recorded-replay.c: its graphs are built
 * again from their recorded nodes, in memory made again at the recorded
 * addresses where they are free.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd-tp.h"
#include "dist/dist.h"
#include "engine/instantiate.h"
#include "engine/schedule.h"
#include "record/rebuild.h"
#include "record/recorded-replay.h"
#include "util.h"

static int cmd_instantiate_exec(int argc, char **argv);

const struct cmd_entry cmd_instantiate_entry = {
	.name = "instantiate",
	.usage = "[--backend B] [--allow-drift] [--share-exec] [--rebase] [--json] [--timeout S] "
	         "[--nccl-mem M] "
	         "PLAN",
	.summary = "rebuild a plan's graphs and check they match",
	.options =
		"  -b, --backend B    host, cuda or auto (default: $BCG_BACKEND, else auto:\n"
		"                     cuda when a GPU can be used, else host)\n"
		"      --allow-drift  exit 0 even when a segment drifted or a weight's\n"
		"                     content changed since the capture\n"
		"      --share-exec   segments of different sizes with one topology (kernel\n"
		"                     functions, launch attributes, edges) share one\n"
		"                     executable, updated to the size before its launch\n"
		"      --rebase       recorded plans: make every allocation anywhere, not\n"
		"                     at its recorded address, and patch the addresses\n"
		"      --json         print JSON instead of tables\n"
		"      --timeout S    tensor-parallel plans: a rank silent this long in a\n"
		"                     collective fails (default 60)\n"
		"      --nccl-mem M   tensor-parallel plans: default or symmetric, the\n"
		"                     memory of the collectives' operands (default: the\n"
		"                     plan's; see capture)\n"
		"  -h, --help         show this help\n",
	.exec = cmd_instantiate_exec,
};

static const char *const status_words[] = {
	[INST_MATCH] = "match",
	[INST_DRIFT] = "drift",
	[INST_UNCHECKED] = "unchecked",
};

/* The variant each reported segment belongs to. */
static int64_t segment_tokens(const plan_t *plan, uint32_t si)
{
	return plan_get_variant(plan, plan_get_segment(plan, si)->variant)->tokens;
}

static void print_text(const plan_t *plan, const char *path, const struct engine *e,
                       const struct inst_report *rep, uint64_t load_ns, uint64_t open_ns)
{
	char first[64], last[64], ops[140];

	printf("plan     %s\n", path);
	printf("backend  %s%s%s%s (captured on %s%s%s%s)\n", e->be->name,
	       e->info.device[0] ? " (" : "", e->info.device, e->info.device[0] ? ")" : "",
	       plan_backend_name(plan_get_meta(plan)->backend),
	       plan_get_meta(plan)->device[0] ? " (" : "", plan_get_meta(plan)->device,
	       plan_get_meta(plan)->device[0] ? ")" : "");
	if (plan_get_dist(plan)->world > 1)
		printf("ranks    %u: each rebuilt its own graphs; rank 0's shown, the others "
		       "report only a drift\n", plan_get_dist(plan)->world);
	printf("\n");
	printf("%6s  %7s  %-34s  %11s  %9s  %s\n", "tokens", "segment", "ops", "nodes", "status",
	       "reason");
	for (uint32_t i = 0; i < rep->nsegments; i++) {
		const struct inst_segment *is = &rep->segments[i];
		const struct plan_segment *seg = plan_get_segment(plan, is->segment);
		char nodes[32];
		plan_op_label(plan, seg->op_first, first, sizeof first);
		plan_op_label(plan, seg->op_first + seg->op_count - 1, last, sizeof last);
		snprintf(ops, sizeof ops, "%s..%s", first, last);
		snprintf(nodes, sizeof nodes, "%u/%u", is->nodes, is->plan_nodes);
		printf("%6lld  %7u  %-34s  %11s  %9s  %s\n", (long long)segment_tokens(plan, is->segment),
		       is->segment, ops, nodes, status_words[is->status], is->reason);
	}
	printf("\n%u segment%s: %u match, %u drift, %u unchecked\n", rep->nsegments,
	       BCG_S(rep->nsegments), rep->matched, rep->drifted, rep->unchecked);
	{
		char mem[32];
		const uint64_t packed = engine_prepared_bytes(e);
		printf("executables %u for %u segment%s (%u sharing another's, %u update%s "
		       "refused), graph memory %s\n", rep->execs, rep->nsegments,
		       BCG_S(rep->nsegments), rep->joined, rep->refused, BCG_S(rep->refused),
		       bcg_human_bytes(rep->exec_bytes, mem, sizeof mem));
		if (e->share != NULL && e->share->opaque > 0)
			printf("%u segment%s could not share: %s\n", e->share->opaque,
			       BCG_S(e->share->opaque), e->share->opaque_why);
		if (packed > 0)
			printf("packed weight copies %s\n", bcg_human_bytes(packed, mem, sizeof mem));
	}
	if (plan_count_weight_sources(plan) > 0) {
		printf("%u weight sources, %.1f MiB read (hashed in %.2f ms): %u changed since "
		       "the capture\n", plan_count_weight_sources(plan),
		       (double)e->weight_bytes / 1048576.0, (double)e->weight_hash_ns / 1e6,
		       e->weights_changed);
		for (uint32_t i = 0; i < plan_count_weight_sources(plan); i++) {
			const struct plan_weight_source *w = plan_get_weight_source(plan, i);
			if (engine_weight_changed(e, i))
				printf("  drift  %s: %s (weight %s): xxh64 %016" PRIx64 ", now %016" PRIx64
				       "\n", w->file, w->name, plan_get_tensor(plan, w->tensor)->name,
				       w->hash, e->weight_hash[i]);
		}
	}
	printf("load %.2f ms, materialize %.2f ms, rebuild %.2f ms, instantiate %.2f ms, "
	       "upload %.2f ms, total %.2f ms\n",
	       (double)load_ns / 1e6, (double)open_ns / 1e6, (double)rep->capture_ns / 1e6,
	       (double)rep->instantiate_ns / 1e6, (double)rep->upload_ns / 1e6,
	       (double)(load_ns + open_ns + rep->capture_ns + rep->instantiate_ns + rep->upload_ns) / 1e6);
}

void cmd_json_segment_check(struct plan_json *j, const char *status, const char *reason,
                            uint32_t plan_nodes, uint32_t nodes, uint64_t plan_fingerprint,
                            uint64_t fingerprint, uint64_t rebuild_ns, uint64_t instantiate_ns,
                            uint64_t upload_ns)
{
	char hex[24];

	plan_json_key(j, "status");
	plan_json_string(j, status);
	plan_json_key(j, "reason");
	plan_json_string(j, reason);
	plan_json_key(j, "plan_nodes");
	plan_json_uint(j, plan_nodes);
	plan_json_key(j, "nodes");
	plan_json_uint(j, nodes);
	plan_json_key(j, "plan_fingerprint");
	snprintf(hex, sizeof hex, "0x%016" PRIx64, plan_fingerprint);
	plan_json_string(j, hex);
	plan_json_key(j, "fingerprint");
	snprintf(hex, sizeof hex, "0x%016" PRIx64, fingerprint);
	plan_json_string(j, hex);
	plan_json_key(j, "rebuild_ms");
	plan_json_double(j, (double)rebuild_ns / 1e6);
	plan_json_key(j, "instantiate_ms");
	plan_json_double(j, (double)instantiate_ns / 1e6);
	plan_json_key(j, "upload_ms");
	plan_json_double(j, (double)upload_ns / 1e6);
}

static void print_json(const plan_t *plan, const char *path, const struct engine *e,
                       const struct inst_report *rep, uint64_t load_ns, uint64_t open_ns,
                       int share)
{
	struct plan_json *j = plan_json_new(stdout);
	char hex[24];

	if (j == NULL)
		return;
	plan_json_object_begin(j);
	plan_json_key(j, "plan");
	plan_json_string(j, path);
	plan_json_key(j, "backend");
	plan_json_string(j, e->be->name);
	plan_json_key(j, "device");
	plan_json_string(j, e->info.device);
	plan_json_key(j, "segments");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < rep->nsegments; i++) {
		const struct inst_segment *is = &rep->segments[i];
		plan_json_object_begin(j);
		plan_json_key(j, "segment");
		plan_json_uint(j, is->segment);
		plan_json_key(j, "tokens");
		plan_json_int(j, segment_tokens(plan, is->segment));
		cmd_json_segment_check(j, status_words[is->status], is->reason, is->plan_nodes,
		                       is->nodes, is->plan_fingerprint, is->fingerprint,
		                       is->capture_ns, is->instantiate_ns, is->upload_ns);
		plan_json_key(j, "share");
		plan_json_string(j, share_status_name(is->share));
		plan_json_key(j, "exec_segment");
		plan_json_uint(j, inst_exec_segment(rep, i));
		plan_json_key(j, "update_result");
		plan_json_int(j, is->refused);
		plan_json_key(j, "exec_bytes");
		plan_json_uint(j, is->exec_bytes);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "matched");
	plan_json_uint(j, rep->matched);
	plan_json_key(j, "drifted");
	plan_json_uint(j, rep->drifted);
	plan_json_key(j, "unchecked");
	plan_json_uint(j, rep->unchecked);
	plan_json_key(j, "weights");
	plan_json_object_begin(j);
	plan_json_key(j, "sources");
	plan_json_uint(j, plan_count_weight_sources(plan));
	plan_json_key(j, "bytes");
	plan_json_uint(j, e->weight_bytes);
	plan_json_key(j, "hash_ms");
	plan_json_double(j, (double)e->weight_hash_ns / 1e6);
	plan_json_key(j, "changed");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_weight_sources(plan); i++) {
		const struct plan_weight_source *w = plan_get_weight_source(plan, i);
		if (!engine_weight_changed(e, i))
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "tensor");
		plan_json_string(j, plan_get_tensor(plan, w->tensor)->name);
		plan_json_key(j, "file");
		plan_json_string(j, w->file);
		plan_json_key(j, "name");
		plan_json_string(j, w->name);
		plan_json_key(j, "plan_xxh64");
		snprintf(hex, sizeof hex, "0x%016" PRIx64, w->hash);
		plan_json_string(j, hex);
		plan_json_key(j, "xxh64");
		snprintf(hex, sizeof hex, "0x%016" PRIx64, e->weight_hash[i]);
		plan_json_string(j, hex);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
	plan_json_key(j, "load_ms");
	plan_json_double(j, (double)load_ns / 1e6);
	plan_json_key(j, "materialize_ms");
	plan_json_double(j, (double)open_ns / 1e6);
	plan_json_key(j, "rebuild_ms");
	plan_json_double(j, (double)rep->capture_ns / 1e6);
	plan_json_key(j, "instantiate_ms");
	plan_json_double(j, (double)rep->instantiate_ns / 1e6);
	plan_json_key(j, "upload_ms");
	plan_json_double(j, (double)rep->upload_ns / 1e6);
	plan_json_key(j, "graph_memory");
	plan_json_object_begin(j);
	plan_json_key(j, "share_exec");
	plan_json_bool(j, share);
	plan_json_key(j, "executables");
	plan_json_uint(j, rep->execs);
	plan_json_key(j, "joined");
	plan_json_uint(j, rep->joined);
	plan_json_key(j, "refused");
	plan_json_uint(j, rep->refused);
	plan_json_key(j, "bytes");
	plan_json_uint(j, rep->exec_bytes);
	plan_json_key(j, "update_ms");
	plan_json_double(j, (double)rep->update_ns / 1e6);
	plan_json_key(j, "unshareable");
	plan_json_uint(j, e->share != NULL ? e->share->opaque : 0);
	plan_json_key(j, "unshareable_reason");
	plan_json_string(j, e->share != NULL ? e->share->opaque_why : "");
	plan_json_object_end(j);
	plan_json_key(j, "packed_weight_bytes");
	plan_json_uint(j, engine_prepared_bytes(e));
	plan_json_object_end(j);
	plan_json_free(j);
}

/* What every rank of an instantiate needs. */
struct inst_ctx {
	const plan_t *plan;          /* rank 0's, holding the others */
	const char   *path, *backend;
	int           json, allow_drift, share;
	uint64_t      load_ns;
};

/* One rank: its plan's every variant rebuilt and checked; rank 0 (or the
 * only rank) prints the report, another rank says only what drifted. */
static int inst_rank(struct dist_comm *comm, void *arg)
{
	struct inst_ctx *c = arg;
	int lead = comm == NULL || comm->rank == 0;
	const plan_t *plan = comm != NULL ? plan_get_rank(c->plan, (uint32_t)comm->rank) : c->plan;
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	struct inst_report rep = { 0 };
	struct share_pool pool = { 0 };
	struct exec_variant *xs = NULL;
	uint32_t nv, built = 0;
	uint64_t t0, open_ns;
	int64_t max_tokens = 0;
	char pre[32];
	int rc, drift;

	if (plan == NULL) {
		bcg_error("%s: rank %d is not in the plan", c->path, comm->rank);
		return BCG_EXIT_USAGE;
	}
	for (uint32_t i = 0; i < plan_count_variants(plan); i++)
		if (plan_get_variant(plan, i)->tokens > max_tokens)
			max_tokens = plan_get_variant(plan, i)->tokens;
	t0 = bcg_now_ns();
	if (engine_open(plan, c->backend, max_tokens, &e, &err) != 0)
		goto fail;
	open_ns = bcg_now_ns() - t0;
	if (e->note[0] != '\0' && lead)
		bcg_note("%s", e->note);
	nv = plan_count_variants(plan);
	if ((xs = calloc(nv + 1, sizeof *xs)) == NULL) {
		engine_fail(&err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto fail;
	}
	/* A rank's collectives never share (backend-cuda.c): the ranks of a
	 * plan share nothing here either, so that they stay alike. */
	if (c->share && (comm == NULL || comm->world <= 1))
		exec_share_begin(e, &pool);
	for (uint32_t i = 0; i < nv; i++, built++)
		if (instantiate_variant(e, i, &xs[i], &rep, &err) != 0)
			goto fail;
	if (lead && c->json)
		print_json(plan, c->path, e, &rep, c->load_ns, open_ns, e->share != NULL);
	else if (lead)
		print_text(plan, c->path, e, &rep, c->load_ns, open_ns);
	/* The report (stdout) says what drifted; a drift that sets the exit
	 * status is also said on stderr, where a script that keeps only the
	 * JSON still sees why, and another rank has no report. */
	drift = rep.drifted > 0 || e->weights_changed > 0;
	if (drift && (!lead || !c->allow_drift))
		bcg_error("%s: %s%u segment%s drifted, %u weight source%s changed since the "
		          "capture%s", c->path, cmd_tp_prefix(comm, pre, sizeof pre), rep.drifted,
		          BCG_S(rep.drifted), e->weights_changed, BCG_S(e->weights_changed),
		          c->allow_drift ? "" : " (exit 1; --allow-drift: exit 0)");
	rc = drift && !c->allow_drift ? BCG_EXIT_NEGATIVE : BCG_EXIT_OK;
	if (fflush(stdout) != 0)
		rc = BCG_EXIT_RUNTIME;
	goto out;
fail:
	cmd_tp_report(&err, plan, NULL, comm);
	rc = err.exit;
out:
	for (uint32_t i = 0; i < built; i++)
		exec_release(e, &xs[i]);
	free(xs);
	if (e != NULL && e->share != NULL) {
		share_pool_release(&pool, e->be, e->b);
		exec_share_end(e);
	}
	inst_report_release(&rep);
	engine_close(e);
	return rc;
}

static int cmd_instantiate_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "allow-drift", no_argument, NULL, 'A' },
		{ "share-exec", no_argument, NULL, 'S' },
		{ "rebase", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'J' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "nccl-mem", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_instantiate_entry;
	const char *backend = cmd_default_backend();
	int allow_drift = 0, json = 0, rebase = 0, share = 0, c, rc, nccl_mem = -1;
	plan_t *plan = NULL;
	struct inst_ctx ctx = { 0 };
	double timeout_s = CMD_TP_TIMEOUT;
	uint64_t t0, load_ns;

	while ((c = cmd_getopt(self, argc, argv, "b:h", longopts)) != -1) {
		switch (c) {
		case 'b': backend = optarg; break;
		case 'A': allow_drift = 1; break;
		case 'S': share = 1; break;
		case 'r': rebase = 1; break;
		case 'J': json = 1; break;
		case 'T':
			if (cmd_tp_parse_timeout(self, optarg, &timeout_s) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'M':
			if (cmd_tp_parse_nccl_mem(self, optarg, &nccl_mem) != 0)
				return BCG_EXIT_USAGE;
			break;
		case CMD_HELP: return BCG_EXIT_OK;
		default: return BCG_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, optind == argc ? "no plan given" : "one plan only");
	if (cmd_check_backend(self, backend) != 0)
		return BCG_EXIT_USAGE;

	t0 = bcg_now_ns();
	if ((rc = cmd_read_plan(argv[optind], &plan)) != BCG_EXIT_OK)
		return rc;
	load_ns = bcg_now_ns() - t0;
	if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED) {
		struct recorded_opts ro = {
			.backend = backend, .json = json, .allow_drift = allow_drift,
			.fill = RR_FILL_SNAPSHOT, .flags = rebase ? RR_REBASE : 0u,
		};
		rc = recorded_instantiate(plan, argv[optind], &ro, load_ns);
		plan_free(plan);
		return rc;
	}
	if (rebase) {
		plan_free(plan);
		return cmd_usage_error(self, "--rebase applies to recorded plans only");
	}
	ctx.plan = plan;
	ctx.path = argv[optind];
	ctx.backend = backend;
	ctx.json = json;
	ctx.allow_drift = allow_drift;
	ctx.share = share;
	ctx.load_ns = load_ns;
	if ((rc = cmd_tp_nccl_mem(self, nccl_mem, (int)plan_get_dist(plan)->world, NULL,
	                          NULL)) != BCG_EXIT_OK) {
		plan_free(plan);
		return rc;
	}
	if (plan_get_dist(plan)->world > 1) {
		struct dist_opts dopts;
		/* the plan's memory unless --nccl-mem says otherwise */
		int mem = nccl_mem >= 0 ? nccl_mem : (int)plan_get_dist(plan)->nccl_mem;
		ctx.backend = cmd_tp_opts(&dopts, "instantiate", backend,
		                          (int)plan_get_dist(plan)->world, timeout_s);
		rc = cmd_tp_nccl_mem(self, mem, (int)plan_get_dist(plan)->world, ctx.backend, &dopts);
		if (rc == BCG_EXIT_OK)
			rc = dist_run(&dopts, inst_rank, &ctx);
	} else {
		rc = inst_rank(NULL, &ctx);
	}
	plan_free(plan);
	return rc;
}
