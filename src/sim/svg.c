/*
 * svg.c - hand-written SVG plots: line charts with axes, ticks, labels and a
 * legend, no dependency.
 *
 *   fill:   DIR/fill_unallocated.svg  unallocated GPU % against arrived GPU %
 *           of capacity, one line per placement (mean over seeds, with a
 *           band of +-1 sd)
 *   replay: DIR/queue_delay_cdf.svg   CDF of queueing delay (log x axis)
 *           DIR/gpu_allocation.svg    GPU allocation % over time
 *
 * Ticks are "nice" numbers (1, 2, 5 x 10^k) chosen for about six intervals.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sim.h"

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NPAL (sizeof palette / sizeof palette[0])

typedef struct plot {
    FILE *f;
    double x0, x1, y0, y1;
    bool logx;
    double W, H, ml, mr, mt, mb;
} plot_t;

static double px(const plot_t *p, double x) {
    double a = p->logx ? log10(x) : x, lo = p->logx ? log10(p->x0) : p->x0,
           hi = p->logx ? log10(p->x1) : p->x1;
    return p->ml + (a - lo) / (hi - lo) * (p->W - p->ml - p->mr);
}

static double py(const plot_t *p, double y) {
    return p->H - p->mb - (y - p->y0) / (p->y1 - p->y0) * (p->H - p->mt - p->mb);
}

static double nice_step(double range) {
    double raw = range / 6, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

static int plot_open(plot_t *p, const char *dir, const char *file, char *err, size_t errlen) {
    char path[4096];
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -errno;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    p->f = fopen(path, "w");
    if (!p->f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    p->W = 900;
    p->H = 560;
    p->ml = 80;
    p->mr = 30;
    p->mt = 50;
    p->mb = 70;
    fprintf(p->f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\" "
            "font-size=\"13\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            p->W, p->H, p->W, p->H);
    return 0;
}

static int plot_close(plot_t *p, char *err, size_t errlen) {
    fputs("</svg>\n", p->f);
    if (fclose(p->f) != 0) {
        snprintf(err, errlen, "writing SVG: %s", strerror(errno));
        return SL_EIO;
    }
    return 0;
}

static void fmt_tick(char *buf, size_t len, double v) {
    if (fabs(v) >= 1e7 || (fabs(v) < 1e-3 && v != 0)) snprintf(buf, len, "%.0e", v);
    else snprintf(buf, len, "%g", v);
}

/* Axes, grid, tick labels, title and axis labels. */
static void plot_axes(plot_t *p, const char *title, const char *xl, const char *yl) {
    FILE *f = p->f;
    double left = p->ml, right = p->W - p->mr, top = p->mt, bottom = p->H - p->mb;
    char buf[32];
    fprintf(f, "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n");
    double ys = nice_step(p->y1 - p->y0);
    for (double y = ceil(p->y0 / ys) * ys; y <= p->y1 + ys * 1e-6; y += ys)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, py(p, y), right,
                py(p, y));
    if (p->logx) {
        for (double x = pow(10, ceil(log10(p->x0))); x <= p->x1 * 1.000001; x *= 10)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px(p, x), top,
                    px(p, x), bottom);
    } else {
        double xs = nice_step(p->x1 - p->x0);
        for (double x = ceil(p->x0 / xs) * xs; x <= p->x1 + xs * 1e-6; x += xs)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px(p, x), top,
                    px(p, x), bottom);
    }
    fprintf(f, "</g>\n<g stroke=\"black\" stroke-width=\"1.2\">\n");
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, bottom, right, bottom);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, top, left, bottom);
    fprintf(f, "</g>\n<g fill=\"black\">\n");
    for (double y = ceil(p->y0 / ys) * ys; y <= p->y1 + ys * 1e-6; y += ys) {
        fmt_tick(buf, sizeof buf, fabs(y) < ys * 1e-9 ? 0 : y);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
                left - 5, py(p, y), left, py(p, y));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 8,
                py(p, y) + 4, buf);
    }
    if (p->logx) {
        for (double x = pow(10, ceil(log10(p->x0))); x <= p->x1 * 1.000001; x *= 10) {
            fmt_tick(buf, sizeof buf, x);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
                    px(p, x), bottom, px(p, x), bottom + 5);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px(p, x),
                    bottom + 20, buf);
        }
    } else {
        double xs = nice_step(p->x1 - p->x0);
        for (double x = ceil(p->x0 / xs) * xs; x <= p->x1 + xs * 1e-6; x += xs) {
            fmt_tick(buf, sizeof buf, fabs(x) < xs * 1e-9 ? 0 : x);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
                    px(p, x), bottom, px(p, x), bottom + 5);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px(p, x),
                    bottom + 20, buf);
        }
    }
    fprintf(f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"17\" "
            "font-weight=\"bold\">", p->W / 2);
    xml_text(f, title);
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"14\">",
            (left + right) / 2, p->H - 22);
    xml_text(f, xl);
    fprintf(f, "</text>\n<text transform=\"translate(22,%.1f) rotate(-90)\" text-anchor=\"middle\" "
            "font-size=\"14\">", (top + bottom) / 2);
    xml_text(f, yl);
    fprintf(f, "</text>\n</g>\n");
}

static void plot_line(plot_t *p, const double *x, const double *y, size_t n, const char *color) {
    if (n == 0) return;
    fprintf(p->f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    for (size_t i = 0; i < n; i++) {
        double xv = x[i];
        if (p->logx && xv < p->x0) xv = p->x0;
        fprintf(p->f, "%.1f,%.1f ", px(p, xv), py(p, y[i]));
    }
    fprintf(p->f, "\"/>\n");
}

static void plot_legend(plot_t *p, const char *const *labels, size_t n, int where) {
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double lw = 7.5 * (double)strlen(labels[i]);
        if (lw > w) w = lw;
    }
    w += 40;
    double h = 20.0 * (double)n + 10;
    /* where: 0 top left, 1 top right, 2 bottom right */
    double x = where == 0 ? p->ml + 10 : p->W - p->mr - w - 10;
    double y = where == 2 ? p->H - p->mb - h - 10 : p->mt + 10;
    fprintf(p->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" "
            "fill-opacity=\"0.9\" stroke=\"#999\"/>\n", x, y, w, h);
    for (size_t i = 0; i < n; i++) {
        double ly = y + 18 + 20.0 * (double)i;
        fprintf(p->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"3\"/>\n", x + 8, ly - 4, x + 30, ly - 4, palette[i % NPAL]);
        fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\">", x + 36, ly);
        xml_text(p->f, labels[i]);
        fprintf(p->f, "</text>\n");
    }
}

int sim_fill_svg(const char *dir, const sim_fill_result_t *r, size_t n, char *err,
                 size_t errlen) {
    plot_t p = {0};
    int rc = plot_open(&p, dir, "fill_unallocated.svg", err, errlen);
    if (rc < 0) return rc;
    double ymax = 0;
    for (size_t i = 0; i < n; i++)
        for (int g = 0; g < SIM_FILL_GRID_N; g++)
            if (g * SIM_FILL_GRID_STEP >= 50 && r[i].mean[g] + r[i].sd[g] > ymax)
                ymax = r[i].mean[g] + r[i].sd[g];
    /* Below 50% arrived the curve is just 100 - arrived; show the part that
     * tells policies apart. */
    p.x0 = 50;
    p.x1 = 130;
    p.y0 = 0;
    p.y1 = ymax > 0 ? ceil(ymax / 5) * 5 : 5;
    if (p.y1 > 50) p.y1 = 50;
    char title[128];
    snprintf(title, sizeof title, "Unallocated GPU vs arrived workload (mean of %zu seed%s)",
             n ? r[0].nseeds : 0, n && r[0].nseeds == 1 ? "" : "s");
    plot_axes(&p, title, "Arrived workload (% of cluster GPU capacity)", "Unallocated GPU (%)");
    fprintf(p.f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
            "stroke-dasharray=\"5,4\"/>\n", px(&p, 100), py(&p, p.y1), px(&p, 100), py(&p, 0));
    double xs[SIM_FILL_GRID_N], ys[SIM_FILL_GRID_N];
    const char *labels[64];
    char lbuf[64][96];
    size_t nl = n < 64 ? n : 64;
    fprintf(p.f, "<defs><clipPath id=\"area\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"%.1f\"/></clipPath></defs>\n<g clip-path=\"url(#area)\">\n", p.ml, p.mt,
            p.W - p.ml - p.mr, p.H - p.mt - p.mb);
    for (size_t i = 0; i < nl; i++) {
        const char *col = palette[i % NPAL];
        int g0 = (int)(p.x0 / SIM_FILL_GRID_STEP);
        size_t k = 0;
        if (r[i].nseeds > 1) {
            fprintf(p.f, "<polygon fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\" points=\"", col);
            for (int g = g0; g < SIM_FILL_GRID_N; g++)
                fprintf(p.f, "%.1f,%.1f ", px(&p, g * SIM_FILL_GRID_STEP), py(&p, r[i].mean[g] + r[i].sd[g]));
            for (int g = SIM_FILL_GRID_N - 1; g >= g0; g--)
                fprintf(p.f, "%.1f,%.1f ", px(&p, g * SIM_FILL_GRID_STEP), py(&p, r[i].mean[g] - r[i].sd[g]));
            fprintf(p.f, "\"/>\n");
        }
        for (int g = g0; g < SIM_FILL_GRID_N; g++, k++) {
            xs[k] = g * SIM_FILL_GRID_STEP;
            ys[k] = r[i].mean[g];
        }
        plot_line(&p, xs, ys, k, col);
        snprintf(lbuf[i], sizeof lbuf[i], "%s (%.2f%% at 100%%)", r[i].placement, r[i].u100_mean);
        labels[i] = lbuf[i];
    }
    fprintf(p.f, "</g>\n");
    plot_legend(&p, labels, nl, 0);
    return plot_close(&p, err, errlen);
}

static void combo_label(char *buf, size_t len, const sim_replay_result_t *x) {
    snprintf(buf, len, "%s / %s / %s%s", x->queue, x->placement, x->backfill,
             x->cfg.sharing ? "" : " / whole GPUs");
}

int sim_replay_svg(const char *dir, const sim_replay_result_t *r, size_t n, char *err,
                   size_t errlen) {
    plot_t p = {0};
    const char *labels[64];
    char lbuf[64][128];
    size_t nl = n < 64 ? n : 64;
    for (size_t i = 0; i < nl; i++) {
        combo_label(lbuf[i], sizeof lbuf[i], &r[i]);
        labels[i] = lbuf[i];
    }
    /* Queueing-delay CDF. */
    int rc = plot_open(&p, dir, "queue_delay_cdf.svg", err, errlen);
    if (rc < 0) return rc;
    double dmax = 10;
    for (size_t i = 0; i < nl; i++)
        if (r[i].nqdelay && r[i].qdelay_sorted[r[i].nqdelay - 1] > dmax)
            dmax = r[i].qdelay_sorted[r[i].nqdelay - 1];
    p.logx = true;
    p.x0 = 1;
    p.x1 = pow(10, ceil(log10(dmax)));
    p.y0 = 0;
    p.y1 = 1;
    plot_axes(&p, "Queueing delay CDF (delays under 1 s drawn at 1 s)",
              "Queueing delay (s, log scale)", "Fraction of started jobs");
    enum { NPTS = 1001 };
    static double xs[NPTS + 1], ys[NPTS + 1];
    for (size_t i = 0; i < nl; i++) {
        size_t k = 0;
        if (r[i].nqdelay == 0) continue;
        for (int q = 0; q < NPTS; q++) {
            double frac = (double)q / (NPTS - 1);
            xs[k] = sim_percentile(r[i].qdelay_sorted, r[i].nqdelay, frac * 100);
            ys[k] = frac;
            k++;
        }
        /* The CDF stays at 1 past the longest delay. */
        xs[k] = p.x1;
        ys[k] = 1;
        k++;
        plot_line(&p, xs, ys, k, palette[i % NPAL]);
    }
    plot_legend(&p, labels, nl, 2);
    if ((rc = plot_close(&p, err, errlen)) < 0) return rc;

    /* GPU allocation over time. */
    memset(&p, 0, sizeof p);
    if ((rc = plot_open(&p, dir, "gpu_allocation.svg", err, errlen)) < 0) return rc;
    double tmax = 0;
    for (size_t i = 0; i < nl; i++)
        if (r[i].alloc.n && r[i].alloc.t_h[r[i].alloc.n - 1] > tmax) tmax = r[i].alloc.t_h[r[i].alloc.n - 1];
    p.x0 = 0;
    p.x1 = tmax > 0 ? tmax : 1;
    bool days = p.x1 > 72;
    if (days) p.x1 /= 24;
    p.y0 = 0;
    p.y1 = 100;
    plot_axes(&p, "GPU allocation over time", days ? "Time (days)" : "Time (hours)",
              "GPU allocated (% of capacity)");
    for (size_t i = 0; i < nl; i++) {
        size_t m = r[i].alloc.n;
        double *tx = sl_xmalloc((m ? m : 1) * sizeof *tx);
        for (size_t k = 0; k < m; k++) tx[k] = days ? r[i].alloc.t_h[k] / 24 : r[i].alloc.t_h[k];
        plot_line(&p, tx, r[i].alloc.v, m, palette[i % NPAL]);
        sl_free(tx);
    }
    plot_legend(&p, labels, nl, 1);
    return plot_close(&p, err, errlen);
}
