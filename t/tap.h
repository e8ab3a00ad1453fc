/*
 * tap.h - a small TAP producer for bcgtool's C unit tests.
 *
 *   int main(void) {
 *           ok(1 + 1 == 2, "addition");
 *           is_int(f(), 3, "f returns 3");
 *           is_str(name, "attn.0", "the first breakpoint's name");
 *           return tap_done();
 *   }
 *
 * Each check prints "ok N - description" or "not ok N - description" with
 * the location and, for is_*, both values as "#" comments. tap_done()
 * prints the plan "1..N" and returns the exit status (0 when all passed).
 * tap_skip(N, why) reports N skipped checks; tap_skip_all(why) skips the
 * whole program. Everything is static: include it in one file only.
 */
#ifndef BCG_TAP_H
#define BCG_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count_;
static int tap_failed_;

__attribute__((format(printf, 4, 5)))
static int tap_ok_(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_count_++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count_);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!pass) {
		tap_failed_++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return pass;
}

#define ok(cond, ...) tap_ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                  \
	do {                                                                    \
		long long got_ = (long long)(got), want_ = (long long)(want);   \
		if (!tap_ok_(got_ == want_, __FILE__, __LINE__, __VA_ARGS__))   \
			printf("#   got %lld, want %lld\n", got_, want_);       \
	} while (0)

#define is_u64(got, want, ...)                                                  \
	do {                                                                    \
		uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);      \
		if (!tap_ok_(got_ == want_, __FILE__, __LINE__, __VA_ARGS__))   \
			printf("#   got 0x%016" PRIx64 ", want 0x%016" PRIx64 "\n", \
			       got_, want_);                                    \
	} while (0)

#define is_str(got, want, ...)                                                  \
	do {                                                                    \
		const char *got_ = (got), *want_ = (want);                      \
		int same_ = got_ != NULL && want_ != NULL && strcmp(got_, want_) == 0; \
		if (!tap_ok_(same_, __FILE__, __LINE__, __VA_ARGS__))           \
			printf("#   got \"%s\", want \"%s\"\n",                 \
			       got_ ? got_ : "(null)", want_ ? want_ : "(null)"); \
	} while (0)

/* |got - want| <= tol * max(1, |want|) */
#define is_close(got, want, tol, ...)                                           \
	do {                                                                    \
		double got_ = (double)(got), want_ = (double)(want);            \
		double mag_ = want_ < 0 ? -want_ : want_;                       \
		double err_ = got_ - want_;                                     \
		if (err_ < 0) err_ = -err_;                                     \
		int pass_ = err_ <= (tol) * (mag_ > 1.0 ? mag_ : 1.0);          \
		if (!tap_ok_(pass_, __FILE__, __LINE__, __VA_ARGS__))           \
			printf("#   got %.9g, want %.9g (tolerance %g)\n",      \
			       got_, want_, (double)(tol));                     \
	} while (0)

#define diag(...) (printf("# "), printf(__VA_ARGS__), putchar('\n'))

__attribute__((unused))
static void tap_skip(int n, const char *why)
{
	while (n-- > 0)
		printf("ok %d # skip %s\n", ++tap_count_, why);
}

__attribute__((unused))
static void tap_skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(0);
}

__attribute__((unused))
static int tap_done(void)
{
	printf("1..%d\n", tap_count_);
	return tap_failed_ ? 1 : 0;
}

#endif /* BCG_TAP_H */
