/*
 * cmd-diff.c - bcgtool diff: show the structural differences between two
 * plans.
 *
 * libplan's plan_diff() finds them (see diff.c for how records are
 * matched); this file shows them like a unified diff, one line per
 * variant (--stat), or as JSON. The exit status answers "do they
 * differ?": 0 no, 1 yes, 2 a plan could not be read. Choices made by
 * measurement between candidates within the tuner's margin (libplan's
 * field "impl (close)") are shown and noted but are no difference, unless
 * --strict: two captures of one script would otherwise differ at random.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "plan.h"
#include "table.h"
#include "util.h"

static int cmd_diff_exec(int argc, char **argv);

const struct cmd_entry cmd_diff_entry = {
	.name = "diff",
	.usage = "[--ignore-env] [--strict] [--stat | --json] [--color WHEN] A B",
	.summary = "show the structural differences between two plans",
	.options =
		"      --ignore-env  ignore the tool version, device and toolkit versions,\n"
		"                    and the script's directory (not its name or content)\n"
		"      --strict      count choices made between candidates measured within\n"
		"                    the tuner's margin (close) as differences\n"
		"      --stat        one line per variant: its items same, added, removed,\n"
		"                    changed, renamed, moved\n"
		"      --json        the differences as JSON (see bcgtool-diff(1))\n"
		"      --color WHEN  auto (default: on a terminal, unless NO_COLOR is set),\n"
		"                    always or never\n"
		"  -h, --help        show this help\n",
	.exec = cmd_diff_exec,
};

/* How one variant's items compare. */
struct diff_stat {
	int64_t  tokens;
	uint32_t va, vb;          /* variant indexes, PLAN_NONE where absent */
	uint32_t same, added, removed, changed, renamed, moved;
	uint32_t fields;          /* variant fields (mode, peak) that differ */
	uint32_t checks;          /* checks that differ */
	uint32_t choices;         /* implementation choices that differ */
};

struct diff_view {
	const plan_t           *a;
	const plan_t           *b;
	const struct plan_diff *d;
	struct style            st;
	struct diff_stat       *stats;
	uint32_t                nstats;
};

/* ---------------------------------------------------------------------- */
/* Per-variant counts.                                                     */

/* A choice that went another way between close candidates (diff.c). */
static int diff_is_close(const struct plan_diff_entry *e)
{
	return e->area == PLAN_DIFF_CHOICES && strcmp(e->field, "impl (close)") == 0;
}

static uint32_t diff_count_close(const struct plan_diff *d)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < plan_diff_length(d); i++)
		n += diff_is_close(plan_diff_get(d, i));
	return n;
}

static int stat_by_tokens(const void *x, const void *y)
{
	const struct diff_stat *a = x, *b = y;

	return a->tokens < b->tokens ? -1 : a->tokens > b->tokens;
}

static struct diff_stat *stat_find(struct diff_view *v, int64_t tokens)
{
	for (uint32_t i = 0; i < v->nstats; i++)
		if (v->stats[i].tokens == tokens)
			return &v->stats[i];
	return NULL;
}

static void diff_count(struct diff_view *v)
{
	uint32_t na = plan_count_variants(v->a), nb = plan_count_variants(v->b);

	v->stats = xcalloc((size_t)na + nb + 1, sizeof *v->stats);
	for (uint32_t i = 0; i < na; i++) {
		struct diff_stat *s = &v->stats[v->nstats++];
		s->tokens = plan_get_variant(v->a, i)->tokens;
		s->va = i;
		s->vb = plan_find_variant(v->b, s->tokens);
	}
	for (uint32_t k = 0; k < nb; k++) {
		int64_t tokens = plan_get_variant(v->b, k)->tokens;
		if (plan_find_variant(v->a, tokens) != PLAN_NONE)
			continue;
		struct diff_stat *s = &v->stats[v->nstats++];
		s->tokens = tokens;
		s->va = PLAN_NONE;
		s->vb = k;
	}
	qsort(v->stats, v->nstats, sizeof *v->stats, stat_by_tokens);

	/* An item with several differences counts once, by its strongest:
	 * moved, renamed, then changed. Its entries are consecutive. */
	uint32_t n = plan_diff_length(v->d);
	for (uint32_t i = 0; i < n;) {
		const struct plan_diff_entry *e = plan_diff_get(v->d, i);
		struct diff_stat *s = stat_find(v, e->tokens);
		uint32_t k = i + 1;
		if (s == NULL || (e->area != PLAN_DIFF_ITEMS && e->area != PLAN_DIFF_VARIANTS &&
		                  e->area != PLAN_DIFF_CHECKS && e->area != PLAN_DIFF_CHOICES)) {
			i++;
			continue;
		}
		if (e->area == PLAN_DIFF_VARIANTS) {
			s->fields += e->change == PLAN_DIFF_CHANGED;
			i++;
			continue;
		}
		if (e->area == PLAN_DIFF_CHECKS || e->area == PLAN_DIFF_CHOICES) {
			/* One check or choice, however many of its fields differ. */
			if (e->area == PLAN_DIFF_CHECKS)
				s->checks++;
			else
				s->choices++;
			while (k < n && plan_diff_get(v->d, k)->area == e->area &&
			       plan_diff_get(v->d, k)->a_index == e->a_index &&
			       plan_diff_get(v->d, k)->b_index == e->b_index)
				k++;
			i = k;
			continue;
		}
		int moved = e->change == PLAN_DIFF_MOVED, renamed = e->change == PLAN_DIFF_RENAMED;
		while (k < n) {
			const struct plan_diff_entry *f = plan_diff_get(v->d, k);
			if (f->area != e->area || f->tokens != e->tokens || f->a_index != e->a_index ||
			    f->b_index != e->b_index)
				break;
			moved |= f->change == PLAN_DIFF_MOVED;
			renamed |= f->change == PLAN_DIFF_RENAMED;
			k++;
		}
		switch (e->change) {
		case PLAN_DIFF_SAME:    s->same++; break;
		case PLAN_DIFF_ADDED:   s->added++; break;
		case PLAN_DIFF_REMOVED: s->removed++; break;
		default:
			if (moved)
				s->moved++;
			else if (renamed)
				s->renamed++;
			else
				s->changed++;
			break;
		}
		i = k;
	}
}

static int stat_identical(const struct diff_stat *s)
{
	return s->va != PLAN_NONE && s->vb != PLAN_NONE && s->added + s->removed + s->changed +
	       s->renamed + s->moved + s->fields + s->checks + s->choices == 0;
}

/* ---------------------------------------------------------------------- */
/* Text.                                                                   */

static void diff_header(struct diff_view *v, const struct plan_diff_entry *e)
{
	const struct style *st = &v->st;

	if (e->area == PLAN_DIFF_ITEMS) {
		uint32_t ia = plan_find_variant(v->a, e->tokens);
		uint32_t ib = plan_find_variant(v->b, e->tokens);
		if (plan_get_origin(v->a) == PLAN_ORIGIN_RECORDED && ia != PLAN_NONE) {
			/* Recordings pair variants by label: A's names it. */
			printf("%s@@ variant %lld \"%s\" @@%s\n", st->cyan, (long long)e->tokens,
			       plan_get_variant(v->a, ia)->label, st->reset);
			return;
		}
		if (ia == PLAN_NONE || ib == PLAN_NONE) {
			printf("%s@@ variant %lld @@%s\n", st->cyan, (long long)e->tokens, st->reset);
			return;
		}
		int ma = plan_get_variant(v->a, ia)->mode, mb = plan_get_variant(v->b, ib)->mode;
		if (ma == mb)
			printf("%s@@ variant %lld (%s) @@%s\n", st->cyan, (long long)e->tokens,
			       plan_mode_name(ma), st->reset);
		else
			printf("%s@@ variant %lld (%s -> %s) @@%s\n", st->cyan, (long long)e->tokens,
			       plan_mode_name(ma), plan_mode_name(mb), st->reset);
	} else if (e->area == PLAN_DIFF_VARIANTS) {
		printf("%s@@ capture sizes @@%s\n", st->cyan, st->reset);
	} else {
		printf("%s@@ %s @@%s\n", st->cyan, plan_diff_area_name(e->area), st->reset);
	}
}

static void diff_line(const struct diff_view *v, char sign, const char *indent, const char *text,
                      const char *note)
{
	const char *color = sign == '-' ? v->st.red : sign == '+' ? v->st.green : "";

	printf("%s%c%s%s%s%s\n", color, sign, indent, text, note, color[0] ? v->st.reset : "");
}

static void diff_entry(const struct diff_view *v, const struct plan_diff_entry *e,
                       const char **subject)
{
	char text[1200];

	if (e->field[0] != '\0') {
		/* A field of a record: the record once, then its fields. */
		if (e->subject[0] != '\0' && (*subject == NULL || strcmp(*subject, e->subject) != 0))
			diff_line(v, ' ', "", e->subject, "");
		*subject = e->subject;
		const char *indent = e->subject[0] != '\0' ? "  " : "";
		if (e->a[0] != '\0') {
			snprintf(text, sizeof text, "%s: %s", e->field, e->a);
			diff_line(v, '-', indent, text, "");
		}
		if (e->b[0] != '\0') {
			snprintf(text, sizeof text, "%s: %s", e->field, e->b);
			diff_line(v, '+', indent, text, "");
		}
		return;
	}
	*subject = e->subject;
	switch (e->change) {
	case PLAN_DIFF_SAME:
		diff_line(v, ' ', "", e->a, "");
		break;
	case PLAN_DIFF_ADDED:
		diff_line(v, '+', "", e->b, "");
		break;
	case PLAN_DIFF_REMOVED:
		diff_line(v, '-', "", e->a, "");
		break;
	default:
		diff_line(v, '-', "", e->a, "");
		diff_line(v, '+', "", e->b, e->change == PLAN_DIFF_RENAMED ? " (renamed)" :
		          e->change == PLAN_DIFF_MOVED ? " (moved)" : "");
		break;
	}
}

/* Is entry I one to show: a difference, or an item next to one? */
static int diff_shown(const struct plan_diff *d, uint32_t i)
{
	const struct plan_diff_entry *e = plan_diff_get(d, i);

	if (e->change != PLAN_DIFF_SAME)
		return 1;
	/* Context: the items just before and after a different one. */
	for (int dir = -1; dir <= 1; dir += 2) {
		const struct plan_diff_entry *f;
		uint32_t k = i;
		/* Skip the other entries of the same item (none for SAME). */
		if ((dir < 0 && k == 0) || (dir > 0 && k + 1 >= plan_diff_length(d)))
			continue;
		k = dir < 0 ? k - 1 : k + 1;
		f = plan_diff_get(d, k);
		if (f->area == e->area && f->tokens == e->tokens && f->change != PLAN_DIFF_SAME)
			return 1;
	}
	return 0;
}

static void diff_print_text(struct diff_view *v, const char *pa, const char *pb)
{
	const struct plan_diff *d = v->d;
	const struct plan_diff_entry *prev = NULL;
	const char *subject = NULL;
	uint32_t n = plan_diff_length(d);
	int skipped = 0;

	printf("%s--- %s%s\n", v->st.bold, pa, v->st.reset);
	printf("%s+++ %s%s\n", v->st.bold, pb, v->st.reset);
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_diff_entry *e = plan_diff_get(d, i);
		int group_new = prev == NULL || prev->area != e->area ||
		                (e->area == PLAN_DIFF_ITEMS && prev->tokens != e->tokens);
		if (group_new) {
			/* A variant whose items are all the same shows nothing. */
			if (e->area == PLAN_DIFF_ITEMS) {
				const struct diff_stat *s = stat_find(v, e->tokens);
				if (s != NULL && s->added + s->removed + s->changed + s->renamed + s->moved == 0) {
					prev = e;
					continue;
				}
			}
			if (prev != NULL && skipped)
				diff_line(v, ' ', "", "...", "");
			diff_header(v, e);
			subject = NULL;
			skipped = 0;
		} else if (e->area == PLAN_DIFF_ITEMS) {
			const struct diff_stat *s = stat_find(v, e->tokens);
			if (s != NULL && s->added + s->removed + s->changed + s->renamed + s->moved == 0) {
				prev = e;
				continue;
			}
		}
		prev = e;
		if (!diff_shown(d, i)) {
			skipped = 1;
			continue;
		}
		if (skipped)
			diff_line(v, ' ', "", "...", "");
		skipped = 0;
		diff_entry(v, e, &subject);
	}
	if (skipped)
		diff_line(v, ' ', "", "...", "");
}

static void diff_print_stat(struct diff_view *v)
{
	static const char *const areas[] = { NULL, "meta", "layout", "dims", "vars", "tensors", "ops" };
	uint32_t per_area[sizeof areas / sizeof areas[0]] = { 0 }, other = 0;

	for (uint32_t i = 0; i < v->nstats; i++) {
		const struct diff_stat *s = &v->stats[i];
		char line[512];
		size_t at = 0;

#define PUT(...) do { \
		int w_ = snprintf(line + at, sizeof line - at, __VA_ARGS__); \
		at += w_ > 0 && (size_t)w_ < sizeof line - at ? (size_t)w_ : 0; \
	} while (0)
		if (s->va == PLAN_NONE) {
			const struct plan_variant *y = plan_get_variant(v->b, s->vb);
			printf("variant %lld: added (%s, %u item%s)\n", (long long)s->tokens,
			       plan_mode_name(y->mode), y->nitems, y->nitems == 1 ? "" : "s");
			continue;
		}
		if (s->vb == PLAN_NONE) {
			const struct plan_variant *x = plan_get_variant(v->a, s->va);
			printf("variant %lld: removed (%s, %u item%s)\n", (long long)s->tokens,
			       plan_mode_name(x->mode), x->nitems, x->nitems == 1 ? "" : "s");
			continue;
		}
		const struct plan_variant *x = plan_get_variant(v->a, s->va);
		const struct plan_variant *y = plan_get_variant(v->b, s->vb);
		if (x->mode == y->mode)
			PUT("variant %lld (%s): ", (long long)s->tokens, plan_mode_name(x->mode));
		else
			PUT("variant %lld (%s -> %s): ", (long long)s->tokens, plan_mode_name(x->mode),
			    plan_mode_name(y->mode));
		if (stat_identical(s)) {
			printf("%sidentical\n", line);
			continue;
		}
		if (x->nitems == y->nitems)
			PUT("%u item%s", x->nitems, x->nitems == 1 ? "" : "s");
		else
			PUT("%u -> %u items", x->nitems, y->nitems);
		PUT(", %u same", s->same);
		if (s->changed)
			PUT(", %u changed", s->changed);
		if (s->added)
			PUT(", %u added", s->added);
		if (s->removed)
			PUT(", %u removed", s->removed);
		if (s->renamed)
			PUT(", %u renamed", s->renamed);
		if (s->moved)
			PUT(", %u moved", s->moved);
		if (s->fields)
			PUT("; %u variant field%s changed", s->fields, s->fields == 1 ? "" : "s");
		if (s->checks)
			PUT("; %u check%s changed", s->checks, s->checks == 1 ? "" : "s");
		if (s->choices)
			PUT("; %u choice%s changed", s->choices, s->choices == 1 ? "" : "s");
#undef PUT
		printf("%s\n", line);
	}
	for (uint32_t i = 0; i < plan_diff_length(v->d); i++) {
		const struct plan_diff_entry *e = plan_diff_get(v->d, i);
		if (e->change == PLAN_DIFF_SAME)
			continue;
		if (e->area > 0 && (size_t)e->area < sizeof areas / sizeof areas[0])
			per_area[e->area]++;
		else if (e->area == PLAN_DIFF_DISPATCH)
			other++;
	}
	int first = 1;
	for (size_t a = 1; a < sizeof areas / sizeof areas[0]; a++) {
		if (per_area[a] == 0)
			continue;
		printf("%s%s %u", first ? "plan: " : ", ", areas[a], per_area[a]);
		first = 0;
	}
	if (other) {
		printf("%sdispatch %u", first ? "plan: " : ", ", other);
		first = 0;
	}
	if (!first)
		printf("\n");
}

/* ---------------------------------------------------------------------- */
/* JSON.                                                                   */

static void json_index(struct plan_json *j, uint32_t v)
{
	if (v == PLAN_NONE)
		plan_json_null(j);
	else
		plan_json_uint(j, v);
}

static void diff_print_json(struct diff_view *v, const char *pa, const char *pb)
{
	struct plan_json *j = plan_json_new(stdout);

	if (j == NULL) {
		bcg_error("out of memory");
		exit(BCG_EXIT_RUNTIME);
	}
	plan_json_object_begin(j);
	plan_json_key(j, "a");
	plan_json_string(j, pa);
	plan_json_key(j, "b");
	plan_json_string(j, pb);
	plan_json_key(j, "identical");
	plan_json_bool(j, plan_diff_count(v->d) == 0);
	plan_json_key(j, "differences");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_diff_length(v->d); i++) {
		const struct plan_diff_entry *e = plan_diff_get(v->d, i);
		int per_variant = e->area == PLAN_DIFF_VARIANTS || e->area == PLAN_DIFF_ITEMS ||
		                  e->area == PLAN_DIFF_CHECKS || e->area == PLAN_DIFF_CHOICES;
		if (e->change == PLAN_DIFF_SAME)
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "area");
		plan_json_string(j, plan_diff_area_name(e->area));
		plan_json_key(j, "change");
		plan_json_string(j, plan_diff_change_name(e->change));
		plan_json_key(j, "variant");
		if (per_variant)
			plan_json_int(j, e->tokens);
		else
			plan_json_null(j);
		plan_json_key(j, "subject");
		plan_json_string(j, e->subject);
		plan_json_key(j, "field");
		plan_json_string(j, e->field);
		plan_json_key(j, "a");
		plan_json_string(j, e->a);
		plan_json_key(j, "b");
		plan_json_string(j, e->b);
		plan_json_key(j, "a_index");
		json_index(j, e->area == PLAN_DIFF_META || e->area == PLAN_DIFF_LAYOUT ? PLAN_NONE : e->a_index);
		plan_json_key(j, "b_index");
		json_index(j, e->area == PLAN_DIFF_META || e->area == PLAN_DIFF_LAYOUT ? PLAN_NONE : e->b_index);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "variants");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < v->nstats; i++) {
		const struct diff_stat *s = &v->stats[i];
		plan_json_object_begin(j);
		plan_json_key(j, "tokens");
		plan_json_int(j, s->tokens);
		plan_json_key(j, "status");
		plan_json_string(j, s->va == PLAN_NONE ? "added" : s->vb == PLAN_NONE ? "removed" :
		                 stat_identical(s) ? "identical" : "changed");
		plan_json_key(j, "items_a");
		if (s->va != PLAN_NONE)
			plan_json_uint(j, plan_get_variant(v->a, s->va)->nitems);
		else
			plan_json_null(j);
		plan_json_key(j, "items_b");
		if (s->vb != PLAN_NONE)
			plan_json_uint(j, plan_get_variant(v->b, s->vb)->nitems);
		else
			plan_json_null(j);
		plan_json_key(j, "same");
		plan_json_uint(j, s->same);
		plan_json_key(j, "changed");
		plan_json_uint(j, s->changed);
		plan_json_key(j, "added");
		plan_json_uint(j, s->added);
		plan_json_key(j, "removed");
		plan_json_uint(j, s->removed);
		plan_json_key(j, "renamed");
		plan_json_uint(j, s->renamed);
		plan_json_key(j, "moved");
		plan_json_uint(j, s->moved);
		plan_json_key(j, "choices");
		plan_json_uint(j, s->choices);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
	plan_json_free(j);
}

/* ---------------------------------------------------------------------- */

static int cmd_diff_exec(int argc, char **argv)
{
	enum { OPT_IGNORE_ENV = 256, OPT_STAT, OPT_JSON, OPT_COLOR, OPT_STRICT };
	static const struct option longopts[] = {
		{ "ignore-env", no_argument, NULL, OPT_IGNORE_ENV },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "stat", no_argument, NULL, OPT_STAT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "color", required_argument, NULL, OPT_COLOR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_diff_entry;
	struct diff_view v = { 0 };
	const char *color = "auto";
	unsigned flags = 0;
	int stat = 0, json = 0, strict = 0, c, rc;
	uint32_t close, real;
	plan_t *a = NULL, *b = NULL;
	struct plan_diff *d = NULL;

	while ((c = cmd_getopt(self, argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case OPT_IGNORE_ENV: flags |= PLAN_DIFF_IGNORE_ENV; break;
		case OPT_STRICT: strict = 1; break;
		case OPT_STAT: stat = 1; break;
		case OPT_JSON: json = 1; break;
		case OPT_COLOR: color = optarg; break;
		case CMD_HELP: return BCG_EXIT_OK;
		default: return BCG_EXIT_USAGE;
		}
	}
	if (argc - optind != 2)
		return cmd_usage_error(self, argc - optind < 2 ? "two plans needed" : "two plans only");
	if (stat && json)
		return cmd_usage_error(self, "--stat and --json are exclusive");
	if (strcmp(argv[optind], "-") == 0 && strcmp(argv[optind + 1], "-") == 0)
		return cmd_usage_error(self, "standard input holds one plan: give '-' for one of "
		                       "A and B at most");
	if (style_init(&v.st, color, stdout) != 0)
		return cmd_usage_error(self, "--color takes auto, always or never, not '%s'", color);
	if ((rc = cmd_read_plan(argv[optind], &a)) != BCG_EXIT_OK ||
	    (rc = cmd_read_plan(argv[optind + 1], &b)) != BCG_EXIT_OK)
		goto out;
	if ((d = plan_diff(a, b, flags)) == NULL) {
		bcg_error("out of memory comparing the plans");
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	v.a = a;
	v.b = b;
	v.d = d;
	diff_count(&v);
	close = diff_count_close(d);
	real = plan_diff_count(d) - close;
	if (json)
		diff_print_json(&v, argv[optind], argv[optind + 1]);
	else if (plan_diff_count(d) > 0 && stat)
		diff_print_stat(&v);
	else if (plan_diff_count(d) > 0)
		diff_print_text(&v, argv[optind], argv[optind + 1]);
	if (close > 0 && !strict && !json)
		bcg_note("%u choice%s went another way between candidates measured within the tuner's "
		         "margin (close): noted, not counted as differences (--strict counts them)",
		         close, close == 1 ? "" : "s");
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = BCG_EXIT_RUNTIME;
	else
		rc = real > 0 || (strict && close > 0) ? BCG_EXIT_NEGATIVE : BCG_EXIT_OK;
out:
	free(v.stats);
	plan_diff_free(d);
	plan_free(a);
	plan_free(b);
	return rc;
}
