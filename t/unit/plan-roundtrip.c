/*
 * plan-roundtrip.c - read(write(p)) equals p field by field, and
 * write(read(file)) is the file byte for byte, for a rich plan, the spec's
 * vector, an empty plan and a large one; the same plan always gives the
 * same bytes; files round-trip through plan_write_file/plan_read_file.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"
#include "plan-sample.h"
#include "tap.h"

/* Takes P. */
static void round_trip_minor(plan_t *p, const char *what, unsigned want_minor)
{
	struct plan_diag d = { 0 };
	void *a = NULL, *b = NULL, *c = NULL;
	size_t alen = 0, blen = 0, clen = 0;
	plan_t *q = NULL;
	char why[256];
	unsigned major = 0, minor = 0;

	if (!ok(p != NULL, "%s: built", what))
		return;
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "%s: written", what);
	is_int(plan_write_memory(p, &b, &blen, &d), 0, "%s: written again", what);
	ok(alen == blen && memcmp(a, b, alen) == 0, "%s: two writes give the same %zu bytes", what, alen);
	is_int(plan_read_memory(a, alen, NULL, &q, &d), 0, "%s: read back (%s)", what,
	       q == NULL ? d.message : "");
	if (q != NULL) {
		if (!ok(sample_plans_equal(p, q, why, sizeof why), "%s: read(write(p)) equals p", what))
			diag("    first difference: %s", why);
		plan_get_format_version(q, &major, &minor);
		/* Without weight sources or a prompt feed a plan is written
		 * as 1.1, as before 1.2 (test_weights has the 1.2 ones). */
		ok(major == PLAN_FORMAT_MAJOR && minor == want_minor,
		   "%s: the plan read remembers format %u.%u", what, major, minor);
		is_int(plan_write_memory(q, &c, &clen, &d), 0, "%s: the plan read is written", what);
		ok(clen == alen && memcmp(a, c, alen) == 0, "%s: write(read(file)) is the file", what);
	}
	plan_free(q);
	plan_free(p);
	free(a);
	free(b);
	free(c);
}

static void round_trip(plan_t *p, const char *what)
{
	round_trip_minor(p, what, 1);
}

/* A recorded plan (1.4): every record of it, its bytes included, comes
 * back; the model's accessors answer as the builder was told. */
static void test_recorded(void)
{
	plan_t *p = sample_recorded(3);
	uint64_t off = 0;

	if (!ok(p != NULL, "recorded plan: built"))
		return;
	is_int(plan_get_origin(p), PLAN_ORIGIN_RECORDED, "recorded plan: its origin");
	ok(strcmp(plan_origin_name(PLAN_ORIGIN_RECORDED), "recorded") == 0 &&
	   strcmp(plan_origin_name(PLAN_ORIGIN_SCRIPT), "script") == 0, "origin names");
	ok(strcmp(plan_break_reason_name(PLAN_BREAK_RECORDED), "recorded") == 0,
	   "the recorded break reason's name");
	is_int(plan_count_modules(p), 2, "two modules");
	is_int(plan_count_functions(p), 3, "three functions");
	is_int(plan_count_allocs(p), 2, "two allocations");
	is_int(plan_count_launches(p), 5 + 6 + 1, "5 launches, 2 x 3 layers, 1 copy");
	is_int(plan_find_alloc(p, 0, UINT64_C(0x7f0000200000) + 4097, &off), 1,
	       "plan_find_alloc: an address inside allocation 1");
	ok(off == 4097, "at its offset (%llu)", (unsigned long long)off);
	is_int(plan_find_alloc(p, 0, UINT64_C(0x7f0000000000) + 64, &off), 0,
	       "one past allocation 0's end is its end pointer");
	ok(off == 64, "at offset 64, its size");
	is_int(plan_find_alloc(p, 0, UINT64_C(0x7f0000000000) + 65, &off), PLAN_NONE,
	       "two past it is in none");
	is_int(plan_find_alloc(p, 1, UINT64_C(0x7f0000000000), &off), PLAN_NONE,
	       "nor is an address of another device");
	const struct plan_segment *s = plan_get_segment(p, 0);
	ok(s != NULL && strcmp(s->nodes[1].kernel, "_Z6matmulIfLi128EEvPKT_S2_PS0_iii") == 0 &&
	   s->nodes[1].grid[0] == 8 && s->nodes[1].shmem == 49152,
	   "a recorded kernel node shows its launch's function, grid and shared memory");
	round_trip_minor(p, "recorded plan", 4);
}

static void test_files(void)
{
	char dir[] = "/tmp/plan-roundtrip.XXXXXX", path[128];
	struct plan_diag d = { 0 };
	plan_t *p = sample_rich(), *q = NULL;
	void *mem = NULL;
	size_t mlen = 0, flen = 0;
	unsigned char *file = NULL;
	char why[256];

	if (mkdtemp(dir) == NULL) {
		tap_skip(4, "cannot make a temporary directory");
		plan_free(p);
		return;
	}
	snprintf(path, sizeof path, "%s/rich.plan", dir);
	is_int(plan_write_file(p, path, &d), 0, "plan_write_file writes a new file");
	plan_write_memory(p, &mem, &mlen, NULL);
	file = sample_slurp(path, &flen);
	ok(file != NULL && flen == mlen && memcmp(file, mem, mlen) == 0,
	   "the file holds exactly what plan_write_memory gives");
	is_int(plan_read_file(path, NULL, &q, &d), 0, "plan_read_file reads it");
	ok(q != NULL && sample_plans_equal(p, q, why, sizeof why), "and the plan read equals the plan written");
	unlink(path);
	rmdir(dir);
	plan_free(q);
	plan_free(p);
	free(mem);
	free(file);
}

/* The time stamp is the only thing that may differ between two captures
 * of the same script: meta.created, taken from plan_now(). */
static void test_created(void)
{
	plan_t *p = sample_vector();
	struct plan_meta m = *plan_get_meta(p);
	void *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;

	setenv("SOURCE_DATE_EPOCH", "1234567890", 1);
	m.created = plan_now();
	plan_set_meta(p, &m, NULL);
	plan_write_memory(p, &a, &alen, NULL);
	m.created = plan_now();
	plan_set_meta(p, &m, NULL);
	plan_write_memory(p, &b, &blen, NULL);
	ok(a != NULL && alen == blen && memcmp(a, b, alen) == 0,
	   "with SOURCE_DATE_EPOCH set, two stamped writes are identical");
	free(b);
	m.created = 1234567891;
	plan_set_meta(p, &m, NULL);
	plan_write_memory(p, &b, &blen, NULL);
	ok(b != NULL && (alen != blen || memcmp(a, b, alen) != 0), "a different time stamp changes the bytes");
	unsetenv("SOURCE_DATE_EPOCH");
	free(a);
	free(b);
	plan_free(p);
}

/* The deep comparison itself sees a change in any part of a plan. */
static void test_compare(void)
{
	plan_t *a = sample_rich(), *b = sample_rich();
	char why[256];
	struct plan_meta m;

	ok(sample_plans_equal(a, b, why, sizeof why), "two rich plans built alike compare equal");
	plan_set_segment_times(b, 2, 31, 42, NULL);
	ok(!sample_plans_equal(a, b, why, sizeof why) && strstr(why, "segment 2") != NULL,
	   "a segment's instantiate time differs (%s)", why);
	plan_set_segment_times(b, 2, 31, 41, NULL);
	plan_set_variant_peak(b, 1, 5, NULL);
	ok(!sample_plans_equal(a, b, why, sizeof why) && strstr(why, "variant 1") != NULL,
	   "a variant's peak differs (%s)", why);
	plan_set_variant_peak(b, 1, plan_get_variant(a, 1)->peak_bytes, NULL);
	m = *plan_get_meta(b);
	m.device = "NVIDIA H200";
	plan_set_meta(b, &m, NULL);
	ok(!sample_plans_equal(a, b, why, sizeof why) && strstr(why, "meta.device") != NULL,
	   "the device differs (%s)", why);
	m.device = plan_get_meta(a)->device;
	plan_set_meta(b, &m, NULL);
	ok(sample_plans_equal(a, b, why, sizeof why), "put back, they compare equal again");
	plan_free(a);
	plan_free(b);
}

/* What format 1.1 added comes back as the rich sample set it, checked
 * here by value (the deep comparison could miss a field both sides
 * dropped). */
static void test_new_fields(void)
{
	plan_t *p = sample_rich(), *q = NULL;
	struct plan_diag d = { 0 };
	void *a = NULL;
	size_t alen = 0;

	if (p == NULL || plan_write_memory(p, &a, &alen, &d) != 0 ||
	    plan_read_memory(a, alen, NULL, &q, &d) != 0) {
		tap_skip(5, "the rich sample does not round-trip");
		goto out;
	}
	is_int(plan_get_meta(q)->features, PLAN_FEATURE_PDL, "the features come back");
	const struct plan_segment *s = plan_get_segment(q, 1);
	ok(s->nedges == 4 && s->edges[0].type == PLAN_EDGE_PROGRAMMATIC &&
	   s->edges[0].from_port == PLAN_PORT_PROGRAMMATIC && s->edges[1].type == PLAN_EDGE_DEFAULT &&
	   s->edges[2].from_port == PLAN_PORT_LAUNCH_COMPLETION && s->edges[3].to_port == 0,
	   "edge types and ports come back");
	const struct plan_choice *c = plan_find_choice(q, 0, 1);
	ok(plan_count_choices(q) == 4 && c != NULL && strcmp(c->impl, "mma") == 0 &&
	   c->flags == (PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE) && c->ncand == 3 &&
	   strcmp(c->cand[2].impl, "cublaslt") == 0 && c->cand[2].us == 9.75,
	   "a tuned choice comes back with its candidates and times");
	c = plan_find_choice(q, 2, 1);
	ok(c != NULL && strcmp(c->impl, "cublas") == 0 && c->flags == 0 && c->ncand == 0 &&
	   c->cand == NULL, "a default choice with no candidates comes back");
	ok(plan_find_choice(q, 1, 2) == NULL, "and no choice where none was made");
out:
	plan_free(p);
	plan_free(q);
	free(a);
}

/* Format 1.9: the rich sample with v1's choice confirmed in the step
 * (another candidate than the fastest alone) is written as 1.9 and comes
 * back so; switched back to what it was, the plan is written byte for
 * byte as before (1.1), as every plan without a Step choice is. */
static void test_step(void)
{
	plan_t *p = sample_rich(), *q = NULL, *plain = sample_rich();
	const uint32_t step = PLAN_CHOICE_TUNED | PLAN_CHOICE_STEP;
	struct plan_diag d = { 0 };
	void *a = NULL, *b = NULL, *c = NULL;
	size_t alen = 0, blen = 0, clen = 0;
	unsigned major = 0, minor = 0;
	char why[256];

	if (!ok(p != NULL && plain != NULL, "step: built"))
		goto out;
	is_int(plan_set_choice(p, 1, 1, "mma", step, &d), 0, "step: v1's choice set to mma (%s)",
	       d.message);
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "step: written (%s)", d.message);
	ok(a != NULL && ((unsigned char *)a)[10] == 9 && ((unsigned char *)a)[11] == 0,
	   "step: the header says format 1.9");
	is_int(plan_read_memory(a, alen, NULL, &q, &d), 0, "step: read back (%s)", d.message);
	if (q != NULL) {
		const struct plan_choice *ch = plan_find_choice(q, 1, 1);
		if (!ok(sample_plans_equal(p, q, why, sizeof why), "step: read(write(p)) equals p"))
			diag("    first difference: %s", why);
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == PLAN_FORMAT_MINOR_STEP, "step: read as format %u.%u", major,
		   minor);
		ok(ch != NULL && strcmp(ch->impl, "mma") == 0 && ch->flags == step && ch->ncand == 2 &&
		   ch->cand[0].us == 2.0, "step: the choice comes back, mma in the step, cublas "
		   "faster alone");
		is_int(plan_write_memory(q, &c, &clen, &d), 0, "step: the plan read is written");
		ok(clen == alen && memcmp(a, c, alen) == 0, "step: write(read(file)) is the file");
	} else {
		tap_skip(4, "not read");
	}
	free(a);
	a = NULL;
	is_int(plan_set_choice(p, 1, 1, "cublas", PLAN_CHOICE_TUNED, &d), 0,
	       "step: switched back to cublas, tuned alone");
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "step: written again");
	is_int(plan_write_memory(plain, &b, &blen, &d), 0, "step: the untouched sample is written");
	ok(a != NULL && b != NULL && alen == blen && memcmp(a, b, alen) == 0 &&
	   ((unsigned char *)a)[10] == 1, "step: without Step, format 1.1 as before, byte for byte");
out:
	plan_free(p);
	plan_free(q);
	plan_free(plain);
	free(a);
	free(b);
	free(c);
}

/* A plan of format 1.2: a weight read from a checkpoint in two row blocks
 * (one hashed, one not yet), and a prompt feed taking back an output. */
static plan_t *weights_plan(void)
{
	plan_t *p = plan_new();
	uint32_t T, H, w, ids, next;
	struct plan_tensor t;
	struct plan_meta meta = { .tool = "bcgtool test", .script = "w.yaml",
	                          .backend = PLAN_BACKEND_HOST };

	if (p == NULL || plan_set_meta(p, &meta, NULL) != 0 ||
	    plan_set_layout(p, &(struct plan_layout){ 1024, 1024, 256 }, NULL) != 0 ||
	    plan_add_dim(p, &(struct plan_dim){ "T", "", 4, PLAN_DIM_TOKENS }, &T, NULL) != 0 ||
	    plan_add_dim(p, &(struct plan_dim){ "H", "8", 8, 0 }, &H, NULL) != 0)
		goto fail;
	memset(&t, 0, sizeof t);
	t.name = "w";
	t.dtype = PLAN_DTYPE_F32;
	t.role = PLAN_ROLE_WEIGHT;
	t.rank = 1;
	t.shape[0] = (struct plan_axis){ H, 8 };
	for (int k = 1; k < PLAN_MAX_RANK; k++)
		t.shape[k] = (struct plan_axis){ PLAN_NONE, 0 };
	t.init.kind = PLAN_INIT_SAFETENSORS;
	t.feed.var = PLAN_NONE;
	t.bytes = 32;
	if (plan_add_tensor(p, &t, &w, NULL) != 0)
		goto fail;
	t.name = "ids";
	t.dtype = PLAN_DTYPE_I32;
	t.role = PLAN_ROLE_INPUT;
	t.shape[0] = (struct plan_axis){ T, 4 };
	t.init.kind = PLAN_INIT_NONE;
	t.feed = (struct plan_feed){ PLAN_FEED_PROMPT, PLAN_NONE, 5, 100, 0, 2 };
	t.offset = 256;
	t.bytes = 16;
	if (plan_add_tensor(p, &t, &ids, NULL) != 0)
		goto fail;
	t.name = "next";
	t.role = PLAN_ROLE_OUTPUT;
	t.feed = (struct plan_feed){ PLAN_FEED_NONE, PLAN_NONE, 0, 0, 0, PLAN_NONE };
	t.offset = 512;
	if (plan_add_tensor(p, &t, &next, NULL) != 0)
		goto fail;
	if (plan_add_weight_source(p, &(struct plan_weight_source){ w, 0, "/m/model.safetensors",
	                           "a.weight", PLAN_DTYPE_BF16, 8, 0, 0, 0, 0, 0, 0, 0 }, NULL, NULL) != 0 ||
	    plan_add_weight_source(p, &(struct plan_weight_source){ w, 16, "/m/shard-2.safetensors",
	                           "b.weight", PLAN_DTYPE_F32, 16, 0, 0, 0, 0, 0, 0, 0 }, NULL, NULL) != 0 ||
	    plan_set_weight_hash(p, 0, UINT64_C(0xfedcba9876543210), NULL) != 0)
		goto fail;
	return p;
fail:
	plan_free(p);
	return NULL;
}

static void test_weights(void)
{
	plan_t *p = weights_plan(), *q = NULL;
	void *a = NULL, *c = NULL;
	size_t alen = 0, clen = 0;
	unsigned major = 0, minor = 0;
	struct plan_diag d = { 0 };
	const struct plan_weight_source *w0, *w1;

	if (!ok(p != NULL, "weights plan: built"))
		return;
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "weights plan: written");
	ok(a != NULL && ((unsigned char *)a)[10] == 2 && ((unsigned char *)a)[11] == 0,
	   "weights plan: the header says format 1.2");
	is_int(plan_read_memory(a, alen, NULL, &q, &d), 0, "weights plan: read back (%s)", d.message);
	if (q != NULL) {
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == 2, "weights plan: the plan read remembers 1.2");
		w0 = plan_get_weight_source(q, 0);
		w1 = plan_get_weight_source(q, 1);
		ok(plan_count_weight_sources(q) == 2 && w0 != NULL && w1 != NULL &&
		   w0->tensor == 0 && w0->offset == 0 && strcmp(w0->file, "/m/model.safetensors") == 0 &&
		   strcmp(w0->name, "a.weight") == 0 && w0->dtype == PLAN_DTYPE_BF16 && w0->bytes == 8 &&
		   w0->hash == UINT64_C(0xfedcba9876543210) && w0->flags == PLAN_WSRC_HASHED,
		   "weights plan: the first source comes back field by field");
		ok(w1 != NULL && w1->offset == 16 && strcmp(w1->file, "/m/shard-2.safetensors") == 0 &&
		   strcmp(w1->name, "b.weight") == 0 && w1->dtype == PLAN_DTYPE_F32 && w1->bytes == 16 &&
		   w1->flags == 0, "weights plan: the second, unhashed, too");
		ok(plan_get_tensor(q, 0)->init.kind == PLAN_INIT_SAFETENSORS &&
		   plan_get_tensor(q, 1)->feed.kind == PLAN_FEED_PROMPT &&
		   plan_get_tensor(q, 1)->feed.from == 2 && plan_get_tensor(q, 1)->feed.var == PLAN_NONE &&
		   plan_get_tensor(q, 1)->feed.range == 100,
		   "weights plan: the init kind and the prompt feed's feedback come back");
		is_int(plan_write_memory(q, &c, &clen, &d), 0, "weights plan: the plan read is written");
		ok(clen == alen && memcmp(a, c, alen) == 0, "weights plan: write(read(file)) is the file");
	}
	plan_free(q);
	free(a);
	free(c);
	a = NULL;
	/* A block past its tensor's bytes, and a safetensors tensor with no
	 * source, are refused by the validator. */
	plan_add_weight_source(p, &(struct plan_weight_source){ 0, 24, "/m/x.safetensors", "c",
	                       PLAN_DTYPE_F32, 16, 0, 0, 0, 0, 0, 0, 0 }, NULL, NULL);
	ok(plan_write_memory(p, &a, &alen, &d) != 0 &&
	   strstr(d.message, "source 2 (c) of 16 bytes at offset 24 overflows tensor 0 (w) of 32 bytes") != NULL,
	   "weights plan: a block overflowing its tensor is refused (%s)", d.message);
	free(a);
	plan_free(p);
}

int main(void)
{
	test_compare();
	test_new_fields();
	test_step();
	round_trip(sample_rich(), "rich plan");
	round_trip(sample_vector(), "vector plan");
	round_trip(plan_new(), "empty plan");
	round_trip(sample_large(50, 100), "plan of 5000 nodes");
	test_files();
	test_created();
	test_weights();
	test_recorded();
	return tap_done();
}
