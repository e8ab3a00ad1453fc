/*
 * timeline.c - pictures of a joined profile: an SVG timeline of one step
 * and a Chrome trace of every step.
 *
 * The SVG has three rows on the GPU's time axis: the step's items
 * (segments green, breaks orange, as the NVTX ranges are colored), its
 * kernels (colored by op kind, labelled with the op where the name fits;
 * kernel names demangled)
 * and the idle gaps (red) where no kernel ran. Every bar carries a <title>
 * with its figures, which browsers show on hover; a picture rendered to
 * PNG has no hover, so items carry the longest of their names that fits
 * ("break attn.0", "attn.0", "attn"; "seg 1 o.0..v_write.1", "seg 1"),
 * and the legend says what each color is.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "report.h"
#include "trace.h"
#include "util.h"

#define SVG_W       1200.0
#define SVG_LEFT    90.0
#define SVG_RIGHT   20.0
#define SVG_CHAR_W  6.2     /* width of a character at font-size 11 */

/* Distinct from the items' green and orange and the idle red. */
static const char *const kind_palette[] = {
	"#1e88e5", "#8e24aa", "#00897b", "#9e9d24", "#6d4c41", "#d81b60",
	"#00acc1", "#3949ab", "#546e7a", "#ad1457", "#827717", "#4e342e",
};

/* A kind's color: by the order in which the plan's ops first use each
 * kind, so a plan's pictures agree with each other. */
static const char *kind_color(const plan_t *plan, const char *kind)
{
	uint32_t n = 0, nops = plan_count_ops(plan);

	for (uint32_t o = 0; o < nops; o++) {
		const char *k = plan_get_op(plan, o)->kind;
		uint32_t first = 1;
		if (strcmp(k, kind) == 0)
			break;
		for (uint32_t q = 0; q < o && first; q++)
			first = strcmp(plan_get_op(plan, q)->kind, k) != 0;
		n += first;
	}
	return kind_palette[n % (sizeof kind_palette / sizeof kind_palette[0])];
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

struct axis {
	int64_t t0, t1;
	double  scale;      /* px per ns */
};

static double ax(const struct axis *a, int64_t t)
{
	return SVG_LEFT + (double)(t - a->t0) * a->scale;
}

/* A bar with a tooltip, and its label inside when it fits. */
static void bar(FILE *f, const char *cls, double x, double y, double w, double h,
                const char *fill, const char *label, const char *title)
{
	if (w < 1.0)
		w = 1.0;
	fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
	        "fill=\"%s\"><title>", cls, x, y, w, h, fill);
	xml_text(f, title);
	fputs("</title></rect>\n", f);
	if (label != NULL && (double)strlen(label) * SVG_CHAR_W + 4.0 <= w) {
		fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" class=\"label\">", x + w / 2, y + h / 2 + 4);
		xml_text(f, label);
		fputs("</text>\n", f);
	}
}

static int label_fits(const char *s, double w)
{
	return (double)strlen(s) * SVG_CHAR_W + 4.0 <= w;
}

/* The longest of item NAME's names that fits W px, in BUF; NULL if none:
 * the whole name, then a segment's "seg N", a break's op label and its
 * stem before the first '.'. */
static const char *item_label(const char *name, int seg, double w, char *buf, size_t len)
{
	const char *sp;

	if (label_fits(name, w))
		return name;
	if (seg) {
		/* "seg N FIRST..LAST" */
		sp = strchr(name, ' ');
		sp = sp != NULL ? strchr(sp + 1, ' ') : NULL;
		snprintf(buf, len, "%.*s", sp != NULL ? (int)(sp - name) : (int)strlen(name), name);
		return label_fits(buf, w) ? buf : NULL;
	}
	/* "break OP" */
	snprintf(buf, len, "%s", strncmp(name, "break ", 6) == 0 ? name + 6 : name);
	if (label_fits(buf, w))
		return buf;
	buf[strcspn(buf, ".")] = '\0';
	return buf[0] != '\0' && label_fits(buf, w) ? buf : NULL;
}

static double nice_step(double range_ns, int ticks)
{
	double raw = range_ns / ticks, p = pow(10.0, floor(log10(raw)));

	if (raw / p < 2)
		return 2 * p;
	if (raw / p < 5)
		return 5 * p;
	return 10 * p;
}

int report_svg(const char *path, const struct profile *p, uint32_t step, char *msg, size_t len)
{
	const struct prof_step *st = &p->steps[step];
	const struct plan_variant *pv = plan_get_variant(p->plan, p->variant);
	const struct nsys_trace *t = p->trace;
	const char *kinds[64];
	uint32_t nkinds = 0;
	struct bcg_output out;
	struct axis a;
	double height = 250.0, tick;
	int64_t prev_end = -1, reach = -1;
	char title[1024], label[64], short_name[64], name[512];
	FILE *f;

	if (st->gpu.n == 0) {
		snprintf(msg, len, "%s ran no kernel of the plan", st->range->text);
		return -1;
	}
	a.t0 = st->gpu.first;
	a.t1 = st->gpu.last;
	a.scale = (SVG_W - SVG_LEFT - SVG_RIGHT) / (double)(a.t1 - a.t0 > 0 ? a.t1 - a.t0 : 1);
	if (bcg_output_try_open(&out, path, 1, msg, len) != 0)
		return -1;
	f = out.f;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
	        "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
	        SVG_W, height, SVG_W, height);
	fputs("<style>.label{fill:#fff;text-anchor:middle}.row{fill:#333;font-weight:bold}"
	      ".axis{fill:#555;text-anchor:middle}.legend{fill:#333}</style>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
	        SVG_W, height);
	snprintf(title, sizeof title, "%s (%s), %lld tokens: GPU span %.2f us, busy %.2f us, "
	         "idle %.2f us, %u kernel%s", st->range->text, st->phase[0] ? st->phase : "-",
	         (long long)p->tokens, (double)(a.t1 - a.t0) / 1e3, (double)st->gpu.busy / 1e3,
	         (double)(a.t1 - a.t0 - st->gpu.busy) / 1e3, st->gpu.n, BCG_S(st->gpu.n));
	fputs("<text x=\"10\" y=\"20\" font-size=\"13\" class=\"row\">", f);
	xml_text(f, title);
	fputs("</text>\n", f);
	fputs("<text x=\"10\" y=\"59\" class=\"row\">items</text>\n"
	      "<text x=\"10\" y=\"99\" class=\"row\">kernels</text>\n"
	      "<text x=\"10\" y=\"133\" class=\"row\">idle</text>\n", f);

	/* Items: segments and breaks. */
	for (uint32_t i = 0; i < p->nitems; i++) {
		const struct prof_span *g = &st->item_gpu[i];
		int seg = pv->items[i].kind == PLAN_ITEM_SEGMENT;
		int64_t x0 = g->n ? g->first : (prev_end >= 0 ? prev_end : a.t0);
		int64_t x1 = g->n ? g->last : x0;
		snprintf(title, sizeof title, "%s: %u kernel%s, span %.2f us, kernel time %.2f us",
		         p->item_names[i], g->n, BCG_S(g->n), (double)(x1 - x0) / 1e3,
		         (double)g->ksum / 1e3);
		bar(f, seg ? "item seg" : "item break", ax(&a, x0), 40, (double)(x1 - x0) * a.scale,
		    28, seg ? "#43a047" : "#fb8c00",
		    item_label(p->item_names[i], seg, (double)(x1 - x0) * a.scale, short_name,
		               sizeof short_name), title);
		if (g->n)
			prev_end = g->last;
	}

	/* Kernels, by op kind; idle gaps where no kernel runs. */
	for (size_t k = 0; k < t->nkernels; k++) {
		const struct nsys_kernel *kn = &t->kernels[k];
		const struct prof_kattr *at = &p->kattr[k];
		const char *kind = "?";
		if (at->step != step || at->item == PLAN_NONE || at->why != NULL)
			continue;
		if (at->op != PLAN_NONE) {
			kind = plan_get_op(p->plan, at->op)->kind;
			plan_op_label(p->plan, at->op, label, sizeof label);
		} else {
			/* A recorded plan's kernel: its name (no op), demangled
			 * without its parameters. */
			bcg_demangle_short(kn->mangled, label, sizeof label);
		}
		/* The tooltip: the whole demangled name. */
		snprintf(title, sizeof title, "%s (%s): %s, %.2f us", label, kind,
		         bcg_demangle(kn->mangled, name, sizeof name),
		         (double)(kn->end - kn->start) / 1e3);
		bar(f, "kernel", ax(&a, kn->start), 80, (double)(kn->end - kn->start) * a.scale, 28,
		    kind_color(p->plan, kind), label, title);
		if (reach >= 0 && kn->start > reach) {
			snprintf(title, sizeof title, "idle %.2f us", (double)(kn->start - reach) / 1e3);
			bar(f, "idle", ax(&a, reach), 122, (double)(kn->start - reach) * a.scale, 14,
			    "#e53935", NULL, title);
		}
		if (kn->end > reach)
			reach = kn->end;
		{
			uint32_t j;
			for (j = 0; j < nkinds && strcmp(kinds[j], kind) != 0; j++)
				;
			if (j == nkinds && nkinds < sizeof kinds / sizeof kinds[0])
				kinds[nkinds++] = kind;
		}
	}

	/* The time axis, in microseconds from the step's first kernel. */
	tick = nice_step((double)(a.t1 - a.t0), 10);
	fprintf(f, "<line x1=\"%.1f\" y1=\"150\" x2=\"%.1f\" y2=\"150\" stroke=\"#555\"/>\n",
	        SVG_LEFT, SVG_W - SVG_RIGHT);
	for (double v = 0; v <= (double)(a.t1 - a.t0) + 0.5; v += tick) {
		double x = SVG_LEFT + v * a.scale;
		fprintf(f, "<line x1=\"%.1f\" y1=\"150\" x2=\"%.1f\" y2=\"155\" stroke=\"#555\"/>"
		        "<text x=\"%.1f\" y=\"168\" class=\"axis\">%g us</text>\n", x, x, x, v / 1e3);
	}

	/* Legend. */
	{
		double x = SVG_LEFT;
		const char *fixed[][2] = { { "segment (one CUDA graph)", "#43a047" },
		                           { "break (an eager op between graphs)", "#fb8c00" },
		                           { "idle (no kernel running)", "#e53935" } };
		for (size_t i = 0; i < 3; i++) {
			fprintf(f, "<rect x=\"%.1f\" y=\"190\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			        "<text x=\"%.1f\" y=\"200\" class=\"legend\">%s</text>\n",
			        x, fixed[i][1], x + 16, fixed[i][0]);
			x += 30 + SVG_CHAR_W * (double)strlen(fixed[i][0]);
		}
		x = SVG_LEFT;
		for (uint32_t i = 0; i < nkinds; i++) {
			fprintf(f, "<rect x=\"%.1f\" y=\"212\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			        "<text x=\"%.1f\" y=\"222\" class=\"legend\">", x,
			        kind_color(p->plan, kinds[i]), x + 16);
			xml_text(f, kinds[i]);
			fputs("</text>\n", f);
			x += 30 + SVG_CHAR_W * (double)strlen(kinds[i]);
		}
	}
	fputs("</svg>\n", f);
	return bcg_output_try_commit(&out, NULL, 0, msg, len);
}

int report_trace(const char *path, const struct profile *p, char *msg, size_t len)
{
	const struct nsys_trace *t = p->trace;
	const struct plan_variant *pv = plan_get_variant(p->plan, p->variant);
	struct trace_writer *w;
	int64_t origin = INT64_MAX;
	char name[256], label[64];

	if (p->nsteps == 0) {
		snprintf(msg, len, "no step of the plan in the report");
		return -1;
	}
	for (uint32_t s = 0; s < p->nsteps; s++) {
		if (p->steps[s].range->start < origin)
			origin = p->steps[s].range->start;
		if (p->steps[s].gpu.n && p->steps[s].gpu.first < origin)
			origin = p->steps[s].gpu.first;
	}
	if ((w = trace_open(path, msg, len)) == NULL)
		return -1;
	snprintf(name, sizeof name, "GPU%s%s (Nsight Systems)", t->device[0] ? ": " : "",
	         t->device);
	trace_name(w, 1, -1, name, 1);
	trace_name(w, 1, 1, "items", 1);
	trace_name(w, 1, 2, "kernels", 2);
	trace_name(w, 2, -1, "host (NVTX)", 2);
	trace_name(w, 2, 1, "bcgtool replay", 1);

	for (uint32_t s = 0; s < p->nsteps; s++) {
		const struct prof_step *st = &p->steps[s];
		struct trace_arg args[3] = {
			{ .key = "phase", .s = st->phase },
			{ .key = "step", .v = (double)s },
			{ .key = "kernels", .v = st->gpu.n },
		};
		trace_event(w, 2, 1, st->range->text, "step", (double)(st->range->start - origin),
		            (double)(st->range->end - st->range->start), args, 2);
		for (uint32_t i = 0; i < p->nitems; i++) {
			const struct nsys_range *r = st->items[i];
			const struct prof_span *g = &st->item_gpu[i];
			const char *cat = pv->items[i].kind == PLAN_ITEM_SEGMENT ? "segment" : "break";
			trace_event(w, 2, 1, r->text, cat, (double)(r->start - origin),
			            (double)(r->end - r->start), NULL, 0);
			if (g->n == 0)
				continue;
			args[0] = (struct trace_arg){ .key = "step", .s = st->range->text };
			args[1] = (struct trace_arg){ .key = "kernels", .v = g->n };
			args[2] = (struct trace_arg){ .key = "kernel_us", .v = (double)g->ksum / 1e3 };
			trace_event(w, 1, 1, p->item_names[i], cat, (double)(g->first - origin),
			            (double)prof_span_ns(g), args, 3);
		}
	}
	for (size_t k = 0; k < t->nkernels; k++) {
		const struct nsys_kernel *kn = &t->kernels[k];
		const struct prof_kattr *at = &p->kattr[k];
		struct trace_arg args[3];
		size_t nargs = 0;
		if (at->step == PLAN_NONE)
			continue;
		args[nargs++] = (struct trace_arg){ .key = "kernel", .s = kn->name };
		if (at->op != PLAN_NONE) {
			plan_op_label(p->plan, at->op, label, sizeof label);
			args[nargs++] = (struct trace_arg){ .key = "kind",
			                                    .s = plan_get_op(p->plan, at->op)->kind };
		} else if (at->why == NULL) {
			/* A recorded plan's kernel, or the one writing a step's
			 * feeds: attributed to its item, no op. */
			snprintf(label, sizeof label, "%s", kn->name);
		} else {
			snprintf(label, sizeof label, "%s", kn->name);
			args[nargs++] = (struct trace_arg){ .key = "unattributed", .s = at->why };
		}
		args[nargs++] = (struct trace_arg){ .key = "item", .s = at->where };
		trace_event(w, 1, 2, label, at->why == NULL ? "kernel" : "unattributed",
		            (double)(kn->start - origin), (double)(kn->end - kn->start), args, nargs);
	}
	return trace_close(w, msg, len);
}
