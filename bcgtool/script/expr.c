/*
 * expr.c - evaluate the integer expressions of op scripts by recursive
 * descent: expr = term {(+|-) term}, term = unary {(*|/) unary},
 * unary = - unary | primary, primary = number | name | ( expr ).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "expr.h"

struct expr_state {
	const char    *text;
	const char    *p;
	expr_lookup_fn lookup;
	void          *ctx;
	char          *msg;
	size_t         len;
	int            depth;
};

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

int expr_is_name(const char *text)
{
	if (!is_alpha((unsigned char)text[0]))
		return 0;
	for (const char *p = text + 1; *p != '\0'; p++)
		if (!is_alpha((unsigned char)*p) && !is_digit((unsigned char)*p))
			return 0;
	return 1;
}

static void skip_space(struct expr_state *s)
{
	while (*s->p == ' ' || *s->p == '\t')
		s->p++;
}

static int expr_fail_unexpected(struct expr_state *s)
{
	unsigned char c = (unsigned char)*s->p;

	if (c == '\0')
		snprintf(s->msg, s->len, "bad expression '%.80s': it ends too soon", s->text);
	else if (c >= 0x20 && c < 0x7f)
		snprintf(s->msg, s->len, "bad expression '%.80s': unexpected '%c'", s->text, c);
	else
		snprintf(s->msg, s->len, "bad expression '%.80s': unexpected byte 0x%02x",
		         s->text, c);
	return -1;
}

static int expr_fail_overflow(struct expr_state *s)
{
	snprintf(s->msg, s->len, "'%.80s' overflows 64-bit integers", s->text);
	return -1;
}

static int expr_fail_deep(struct expr_state *s)
{
	snprintf(s->msg, s->len, "'%.80s' is nested too deeply (more than %d levels)",
	         s->text, EXPR_MAX_DEPTH);
	return -1;
}

static int expr_sum(struct expr_state *s, int64_t *out);

static int expr_primary(struct expr_state *s, int64_t *out)
{
	skip_space(s);
	if (is_digit((unsigned char)*s->p)) {
		int64_t v = 0;
		while (is_digit((unsigned char)*s->p)) {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *s->p - '0', &v))
				return expr_fail_overflow(s);
			s->p++;
		}
		if (is_alpha((unsigned char)*s->p))
			return expr_fail_unexpected(s);
		*out = v;
		return 0;
	}
	if (is_alpha((unsigned char)*s->p)) {
		const char *start = s->p;
		while (is_alpha((unsigned char)*s->p) || is_digit((unsigned char)*s->p))
			s->p++;
		return s->lookup(s->ctx, start, (size_t)(s->p - start), out, s->msg, s->len);
	}
	if (*s->p == '(') {
		int rc;
		if (++s->depth > EXPR_MAX_DEPTH)
			return expr_fail_deep(s);
		s->p++;
		if ((rc = expr_sum(s, out)) != 0)
			return rc;
		skip_space(s);
		if (*s->p != ')')
			return expr_fail_unexpected(s);
		s->p++;
		s->depth--;
		return 0;
	}
	return expr_fail_unexpected(s);
}

static int expr_unary(struct expr_state *s, int64_t *out)
{
	int rc;

	skip_space(s);
	if (*s->p != '-')
		return expr_primary(s, out);
	if (++s->depth > EXPR_MAX_DEPTH)
		return expr_fail_deep(s);
	s->p++;
	if ((rc = expr_unary(s, out)) != 0)
		return rc;
	if (*out == INT64_MIN)
		return expr_fail_overflow(s);
	*out = -*out;
	s->depth--;
	return 0;
}

static int expr_product(struct expr_state *s, int64_t *out)
{
	int64_t rhs;
	int rc;

	if ((rc = expr_unary(s, out)) != 0)
		return rc;
	for (;;) {
		skip_space(s);
		char op = *s->p;
		if (op != '*' && op != '/')
			return 0;
		s->p++;
		if ((rc = expr_unary(s, &rhs)) != 0)
			return rc;
		if (op == '*') {
			if (__builtin_mul_overflow(*out, rhs, out))
				return expr_fail_overflow(s);
		} else if (rhs == 0) {
			snprintf(s->msg, s->len, "division by zero in '%.80s'", s->text);
			return -1;
		} else if (*out == INT64_MIN && rhs == -1) {
			return expr_fail_overflow(s);
		} else if (*out % rhs != 0) {
			snprintf(s->msg, s->len, "'%.80s' does not divide exactly: %lld / %lld",
			         s->text, (long long)*out, (long long)rhs);
			return -1;
		} else {
			*out /= rhs;
		}
	}
}

static int expr_sum(struct expr_state *s, int64_t *out)
{
	int64_t rhs;
	int rc;

	if ((rc = expr_product(s, out)) != 0)
		return rc;
	for (;;) {
		skip_space(s);
		char op = *s->p;
		if (op != '+' && op != '-')
			break;
		s->p++;
		if ((rc = expr_product(s, &rhs)) != 0)
			return rc;
		if (op == '+' ? __builtin_add_overflow(*out, rhs, out)
		              : __builtin_sub_overflow(*out, rhs, out))
			return expr_fail_overflow(s);
	}
	return 0;
}

int expr_eval(const char *text, expr_lookup_fn lookup, void *ctx, int64_t *out,
              char *msg, size_t len)
{
	struct expr_state s = {
		.text = text, .p = text, .lookup = lookup, .ctx = ctx,
		.msg = msg, .len = len, .depth = 0,
	};
	int64_t v = 0;
	int rc;

	skip_space(&s);
	if (*s.p == '\0') {
		snprintf(msg, len, "expected an integer or an expression, found nothing");
		return -1;
	}
	if ((rc = expr_sum(&s, &v)) != 0)
		return rc;
	skip_space(&s);
	if (*s.p != '\0')
		return expr_fail_unexpected(&s);
	*out = v;
	return 0;
}
