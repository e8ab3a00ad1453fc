/*
 * serve-trace.c - request traces: the JSON Lines reader with its
 * diagnostics, the synthetic spec, and the generator's numbers.
 *
 * The generator's stream is checked against xoshiro256** and splitmix64
 * values computed outside this program (by the published algorithms, in
 * Python); its exponential variates against the C library's log; its
 * distributions by their bounds and means over many draws.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/rng.h"
#include "serve/trace.h"
#include "tap.h"

static int parse(const char *text, struct serve_trace *t, struct serve_diag *d)
{
	return serve_trace_parse(text, strlen(text), t, d);
}

/* TEXT must fail at LINE:COL with MSG. */
static void bad(const char *text, unsigned line, unsigned col, const char *msg, const char *what)
{
	struct serve_trace t;
	struct serve_diag d;
	int rc = parse(text, &t, &d);

	ok(rc == -1 && t.n == 0 && t.req == NULL, "%s: rejected", what);
	is_int(d.line, line, "%s: line", what);
	is_int(d.col, col, "%s: column", what);
	is_str(d.msg, msg, "%s: message", what);
	serve_trace_release(&t);
}

static void test_parse(void)
{
	struct serve_trace t;
	struct serve_diag d;
	const char *text =
		"{\"id\": 7, \"arrival\": 0.5, \"prompt_len\": 10, \"output_len\": 3}\n"
		"\n"
		"  \t\n"
		"{\"output_len\": 1, \"prompt_len\": 1048576, \"arrival\": 0, \"id\": 9}\n"
		"{\"id\": 2, \"arrival\": 0.5, \"prompt_len\": 4, \"output_len\": 5}\n"
		"{\"id\": 3, \"arrival\": 1.0000004, \"prompt_len\": 1, \"output_len\": 1048576}";

	ok(parse(text, &t, &d) == 0, "a trace with blank lines and no final newline parses");
	is_int(t.n, 4, "four requests");
	is_int(t.req[0].id, 9, "the earliest arrival first");
	is_int(t.req[0].prompt_len, 1048576, "keys in any order");
	is_int(t.req[1].id, 7, "equal arrivals keep the file's order (7 before 2)");
	is_int(t.req[2].id, 2, "... then 2");
	is_int(t.req[1].arrival_us, 500000, "arrival in microseconds");
	is_int(t.req[3].arrival_us, 1000000, "arrival rounded to the microsecond");
	is_int(t.req[3].output_len, 1048576, "the longest output allowed");
	is_int(t.req[2].output_len, 5, "output_len");
	serve_trace_release(&t);
}

static void test_errors(void)
{
	bad("{\"id\": 1, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1,}\n", 1, 58,
	    "string or '}' expected near '}'", "a syntax error");
	bad("{\"id\": 1, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1}\n"
	    "{\"id\": 2, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1} 5\n", 2, 59,
	    "end of file expected near '5'", "two values on a line");
	bad("\n[1, 2]\n", 2, 1, "expected a JSON object", "an array");
	bad("{\"id\": 1, \"arrival\": 0, \"prompt\": 1, \"output_len\": 1}", 1, 25,
	    "unknown key 'prompt'", "an unknown key");
	bad("{\"id\": 1, \"arrival\": 0, \"output_len\": 1}", 1, 1, "missing key 'prompt_len'",
	    "a missing length");
	bad("{\"id\": 1, \"prompt_len\": 1, \"output_len\": 1}", 1, 1, "missing key 'arrival'",
	    "a missing arrival");
	bad("{\"id\": 1, \"arrival\": 0, \"prompt_len\": 0, \"output_len\": 1}", 1, 25,
	    "'prompt_len' must be a whole number from 1 to 1048576", "a zero prompt");
	bad("{\"id\": 1, \"arrival\": 0, \"prompt_len\": 2.5, \"output_len\": 1}", 1, 25,
	    "'prompt_len' must be a whole number from 1 to 1048576", "a fractional prompt");
	bad("{\"id\": 1, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1048577}", 1, 42,
	    "'output_len' must be a whole number from 1 to 1048576", "too long an output");
	bad("{\"id\": -1, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1}", 1, 2,
	    "'id' must be a whole number from 0 to 9223372036854775807", "a negative id");
	bad("{\"id\": 1, \"arrival\": -0.1, \"prompt_len\": 1, \"output_len\": 1}", 1, 11,
	    "'arrival' must be a number of seconds from 0 to 10000000", "a negative arrival");
	bad("{\"id\": 1, \"arrival\": \"0\", \"prompt_len\": 1, \"output_len\": 1}", 1, 11,
	    "'arrival' must be a number of seconds from 0 to 10000000", "a string arrival");
	bad("{\"id\": 4, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1}\n"
	    "{\"id\": 5, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1}\n"
	    "{\"id\": 4, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1}\n", 3, 1,
	    "duplicate id 4 (first on line 1)", "a duplicate id");
	/* jansson's column for a duplicate key is its last character. */
	bad("{\"id\": 1, \"id\": 2, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1}", 1, 14,
	    "duplicate object key near '\"id\"'", "a duplicate key");
	bad("\n\n", 0, 0, "no requests", "an empty trace");
}

static void test_read(void)
{
	struct serve_trace t;
	struct serve_diag d;

	ok(serve_trace_read("/nonexistent/trace.jsonl", &t, &d) == -1, "a missing file fails");
	is_int(d.line, 0, "with no position");
	is_str(d.msg, "cannot read: No such file or directory", "and the system's reason");
}

static void test_rng(void)
{
	/* splitmix64 from 0 and xoshiro256** from that state, by the
	 * published algorithms (computed in Python). */
	static const uint64_t seeded[4] = { 0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
	                                    0x06c45d188009454full, 0xf88bb8a8724c81ecull };
	static const uint64_t first[3] = { 0x99ec5f36cb75f2b4ull, 0xbf6e1f784956452aull,
	                                   0x1a5f849d4933e6e0ull };
	struct serve_rng r;
	double worst = 0.0, sum = 0.0;
	int below_ok = 1;

	serve_rng_seed(&r, 0);
	for (int i = 0; i < 4; i++)
		is_u64(r.s[i], seeded[i], "splitmix64 state word %d of seed 0", i);
	for (int i = 0; i < 3; i++)
		is_u64(serve_rng_next(&r), first[i], "xoshiro256** output %d", i);

	/* -ln(u) against the C library over the whole range of u. */
	for (int i = 0; i < 100000; i++) {
		double u = serve_rng_unit(&r), got = serve_rng_neglog(u), want = -log(u);
		double err = fabs(got - want) / (want > 1e-300 ? want : 1.0);
		if (!(u > 0.0 && u <= 1.0))
			worst = 1.0;
		if (want > 0 && err > worst)
			worst = err;
		sum += got;
	}
	ok(worst < 1e-14, "neglog agrees with -log to 1e-14 (worst %.3g)", worst);
	is_close(sum / 100000.0, 1.0, 0.02, "exponential variates have mean 1");
	is_close(serve_rng_neglog(1.0), 0.0, 0.0, "-ln 1 = 0");
	is_close(serve_rng_neglog(0x1.0p-53), 53.0 * log(2.0), 1e-15, "-ln 2^-53");
	for (int i = 0; i < 10000; i++)
		if (serve_rng_below(&r, 3) >= 3)
			below_ok = 0;
	ok(below_ok, "below(3) stays below 3");
	is_int(serve_rng_below(&r, 1), 0, "below(1) is 0");
}

static void test_synth_parse(void)
{
	struct serve_synth s;
	char why[256];

	serve_synth_defaults(&s);
	ok(serve_synth_parse("requests=300,rate=12.5,prompt=uniform:8:900,output=exp:100,seed=42",
	                     &s, why, sizeof why) == 0, "a full spec parses");
	is_int(s.requests, 300, "requests");
	is_close(s.rate, 12.5, 0, "rate");
	ok(s.prompt.kind == SERVE_DIST_UNIFORM && s.prompt.a == 8 && s.prompt.b == 900,
	   "prompt uniform:8:900");
	ok(s.output.kind == SERVE_DIST_EXP && s.output.a == 100 && s.output.b == 800,
	   "output exp:100 is capped at 8 times its mean");
	is_int(s.seed, 42, "seed");
	ok(serve_synth_parse("rate=inf,output=7,prompt=exp:4:5", &s, why, sizeof why) == 0 &&
	   s.rate == 0.0 && s.output.kind == SERVE_DIST_FIXED && s.output.a == 7 &&
	   s.prompt.kind == SERVE_DIST_EXP && s.prompt.b == 5 && s.requests == 300,
	   "inf, a fixed length, an explicit cap; other keys kept");

#define BAD(spec, msg)                                                               \
	do {                                                                         \
		ok(serve_synth_parse(spec, &s, why, sizeof why) == -1, "'%s' fails", spec); \
		is_str(why, msg, "'%s': message", spec);                              \
	} while (0)
	BAD("", "empty synthetic trace spec");
	BAD("requests", "'requests' is not KEY=VALUE");
	BAD("speed=3", "unknown key 'speed' (requests, rate, prompt, output, seed)");
	BAD("requests=0", "requests takes a whole number from 1 to 1000000");
	BAD("requests=12x", "requests takes a whole number from 1 to 1000000");
	BAD("rate=0", "rate takes requests per second (above 0, at most 1e6) or inf");
	BAD("rate=-3", "rate takes requests per second (above 0, at most 1e6) or inf");
	BAD("seed=", "seed takes a whole number");
	BAD("prompt=uniform:9:8", "prompt takes N, uniform:LO:HI or exp:MEAN[:MAX] "
	    "(lengths 1 to 1048576, LO <= HI, MEAN <= MAX)");
	BAD("output=normal:3:4", "output takes N, uniform:LO:HI or exp:MEAN[:MAX] "
	    "(lengths 1 to 1048576, LO <= HI, MEAN <= MAX)");
	BAD("prompt=uniform:3", "prompt takes N, uniform:LO:HI or exp:MEAN[:MAX] "
	    "(lengths 1 to 1048576, LO <= HI, MEAN <= MAX)");
	BAD("seed=1,", "a comma ends the spec");
#undef BAD
}

static void test_synthesize(void)
{
	struct serve_synth s;
	struct serve_trace a, b, c;
	char why[256], *buf = NULL;
	size_t len = 0;
	FILE *f;
	int in_range = 1, sorted = 1, same = 1;
	double psum = 0.0, osum = 0.0;
	struct serve_diag d;

	serve_synth_defaults(&s);
	ok(serve_synth_parse("requests=20000,rate=50,prompt=uniform:10:30,output=exp:64:400,seed=7",
	                     &s, why, sizeof why) == 0, "spec");
	ok(serve_trace_synthesize(&s, &a) == 0 && a.n == 20000, "20000 requests");
	for (uint32_t i = 0; i < a.n; i++) {
		if (a.req[i].id != i || a.req[i].prompt_len < 10 || a.req[i].prompt_len > 30 ||
		    a.req[i].output_len < 1 || a.req[i].output_len > 400)
			in_range = 0;
		if (i > 0 && a.req[i].arrival_us < a.req[i - 1].arrival_us)
			sorted = 0;
		psum += a.req[i].prompt_len;
		osum += a.req[i].output_len;
	}
	ok(in_range, "ids in order, lengths within their distributions");
	ok(sorted, "arrivals in order");
	is_close(psum / a.n, 20.0, 0.01, "uniform:10:30 has mean 20");
	is_close(osum / a.n, 64.0, 0.03, "exp:64 has mean about 64");
	is_close((double)a.req[a.n - 1].arrival_us / 1e6 / (a.n - 1), 1.0 / 50, 0.002,
	         "rate 50: gaps of 20 ms on average");
	ok(a.req[0].arrival_us == 0, "the first request arrives at 0");

	ok(serve_trace_synthesize(&s, &b) == 0, "again");
	ok(a.n == b.n && memcmp(a.req, b.req, a.n * sizeof *a.req) == 0, "the same seed, the same trace");
	serve_trace_release(&b);
	s.seed = 8;
	ok(serve_trace_synthesize(&s, &b) == 0, "another seed");
	ok(memcmp(a.req, b.req, a.n * sizeof *a.req) != 0, "another seed, another trace");
	serve_trace_release(&b);

	s.seed = 7;
	s.rate = 0.0;
	ok(serve_trace_synthesize(&s, &b) == 0, "rate inf");
	for (uint32_t i = 0; i < b.n; i++)
		if (b.req[i].arrival_us != 0 || b.req[i].prompt_len != a.req[i].prompt_len ||
		    b.req[i].output_len != a.req[i].output_len)
			same = 0;
	ok(same, "rate inf: everything at 0, the same lengths as at rate 50");
	serve_trace_release(&b);

	/* Written and read back: the same requests. */
	f = open_memstream(&buf, &len);
	ok(f != NULL && serve_trace_write(f, &a) == 0 && fclose(f) == 0, "written as JSON Lines");
	ok(serve_trace_parse(buf, len, &c, &d) == 0, "and read back");
	ok(c.n == a.n && memcmp(a.req, c.req, a.n * sizeof *a.req) == 0, "unchanged");
	serve_trace_release(&c);
	free(buf);
	serve_trace_release(&a);
}

int main(void)
{
	test_parse();
	test_errors();
	test_read();
	test_rng();
	test_synth_parse();
	test_synthesize();
	return tap_done();
}
