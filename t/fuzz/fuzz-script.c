/*
 * fuzz-script.c - a libFuzzer target for the op script parser.
 *
 * The input is an op script. A failure must say where and why; a script
 * that loads must have its capture sizes in ascending order, a program the
 * plan validator accepts as far as it goes, and an arena the memory
 * planner can lay out (or refuse with a reason).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "plan.h"
#include "script/script.h"
#include "engine/memplan.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script *s = NULL;
	struct script_error err;
	struct memplan mp;
	int64_t *tokens;
	char msg[256];

	if (script_load_memory("fuzz.yaml", (const char *)data, size, &s, &err) != 0) {
		if (s != NULL || err.message[0] == '\0')
			abort();
		return 0;
	}
	if (s->nvariants == 0 || s->program == NULL)
		abort();
	if ((tokens = malloc(s->nvariants * sizeof *tokens)) == NULL)
		abort();
	for (uint32_t i = 0; i < s->nvariants; i++) {
		tokens[i] = s->variants[i].tokens;
		if (i > 0 && tokens[i] <= tokens[i - 1])
			abort();
	}
	msg[0] = '\0';
	if (memplan_place(s->program, tokens, s->nvariants, &mp, msg, sizeof msg) == 0)
		memplan_release(&mp);
	else if (msg[0] == '\0')
		abort();
	free(tokens);
	script_free(s);
	return 0;
}
