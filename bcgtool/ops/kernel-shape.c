/*
 * kernel-shape.c - BCG_GEMV_SHAPE and BCG_MOE_GU_SHAPE, parsed strictly:
 * a value that is not exactly one of the shapes kernel-shape.h lists is
 * refused, so that a measurement cannot run the default while naming
 * another shape.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-shape.h"

static const char *const kernel_shape_vars[] = { "BCG_GEMV_SHAPE", "BCG_MOE_GU_SHAPE" };

int kernel_shape_valid(enum kernel_shape_kind kind, int g, int u)
{
	if (u != 1 && u != 2 && u != 4)
		return 0;
	if (kind == KERNEL_SHAPE_GEMV)
		return (g == 4 || g == 8 || g == 16) && g * u <= 16;
	return (g == 2 || g == 4 || g == 8) && 2 * g * u <= 16;
}

/* A decimal number of one or two digits, no sign, no leading zero, at *P;
 * *P moved past it. -1 when there is none. */
static int kernel_shape_number(const char **p)
{
	const char *s = *p;
	int n = 0, digits = 0;

	while (s[digits] >= '0' && s[digits] <= '9' && digits < 3)
		n = n * 10 + (s[digits++] - '0');
	if (digits == 0 || digits > 2 || (digits == 2 && s[0] == '0'))
		return -1;
	*p = s + digits;
	return n;
}

int kernel_shape_parse(enum kernel_shape_kind kind, const char *value,
                       struct kernel_shape *out, char *msg, size_t len)
{
	const char *var = kernel_shape_vars[kind], *p = value;
	int g, u;

	out->g = 0;
	out->u = 0;
	if (value == NULL || value[0] == '\0' || strcmp(value, "default") == 0)
		return 0;
	if (kind == KERNEL_SHAPE_GEMV && strcmp(value, "auto") == 0) {
		out->g = KERNEL_SHAPE_AUTO;
		return 0;
	}
	if (*p++ == 'g' && (g = kernel_shape_number(&p)) >= 0 && *p++ == 'u' &&
	    (u = kernel_shape_number(&p)) >= 0 && *p == '\0' && kernel_shape_valid(kind, g, u)) {
		out->g = g;
		out->u = u;
		return 0;
	}
	if (kind == KERNEL_SHAPE_GEMV)
		snprintf(msg, len, "%s is '%s': gGuU with G 4, 8 or 16 rows a block and U 1, 2 or 4 "
		         "units a round, G * U <= 16 (g4u2 is the default), or auto or default",
		         var, value);
	else
		snprintf(msg, len, "%s is '%s': gGuU with G 2, 4 or 8 columns a block and U 1, 2 or "
		         "4 units a round, 2G * U <= 16 (g4u1 at one token, g2u2 above, is the default), or default",
		         var, value);
	return -1;
}

int kernel_shapes_from_env(struct kernel_shape *gemv, struct kernel_shape *moe_gu, char *msg,
                           size_t len)
{
	if (kernel_shape_parse(KERNEL_SHAPE_GEMV, getenv(kernel_shape_vars[KERNEL_SHAPE_GEMV]),
	                       gemv, msg, len) != 0)
		return -1;
	return kernel_shape_parse(KERNEL_SHAPE_MOE_GU,
	                          getenv(kernel_shape_vars[KERNEL_SHAPE_MOE_GU]), moe_gu, msg, len);
}
