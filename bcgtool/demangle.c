/*
 * demangle.c - kernel names demangled by libstdc++ (bcgtool links with
 * -lstdc++ for this one function; libplan stays free of C++).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

/* libstdc++'s, from <cxxabi.h> (namespace abi, extern "C" linkage): the
 * demangled name in a malloc'd buffer when BUF is NULL; *STATUS 0 on
 * success, -1 out of memory, -2 not a valid mangled name, -3 bad
 * arguments. */
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

const char *bcg_demangle(const char *name, char *buf, size_t len)
{
	int status = -2;
	char *d = NULL;

	if (len == 0)
		return buf;
	/* Only an Itanium mangled name: a plain C name ("rmsnorm_f32") is
	 * shown as it is, never read as a mangled type. */
	if (strncmp(name, "_Z", 2) == 0)
		d = __cxa_demangle(name, NULL, NULL, &status);
	snprintf(buf, len, "%s", status == 0 && d != NULL ? d : name);
	free(d);
	return buf;
}

const char *bcg_demangle_cb(const char *name, char *buf, size_t len, void *ctx)
{
	(void)ctx;
	return bcg_demangle(name, buf, len);
}

const char *bcg_demangle_short(const char *name, char *buf, size_t len)
{
	size_t n;
	int depth = 0;

	bcg_demangle(name, buf, len);
	if (strcmp(buf, name) == 0 || (n = strlen(buf)) == 0 || buf[n - 1] != ')')
		return buf;
	/* The parameter list: the last parenthesis group, balanced. */
	while (n-- > 0) {
		depth += buf[n] == ')' ? 1 : buf[n] == '(' ? -1 : 0;
		if (depth == 0)
			break;
	}
	if (depth != 0 || n == 0)
		return buf;
	buf[n] = '\0';
	/* A function template's return type. */
	if (strncmp(buf, "void ", 5) == 0)
		memmove(buf, buf + 5, strlen(buf + 5) + 1);
	return buf;
}

const char *bcg_demangle_short_cb(const char *name, char *buf, size_t len, void *ctx)
{
	(void)ctx;
	return bcg_demangle_short(name, buf, len);
}
