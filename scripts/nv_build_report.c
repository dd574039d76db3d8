/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fa_cl_nv_build_report: the registers and spills NVIDIA's own OpenCL compiler reports for each
 * build of an emitted set (fa_cl_info --profile all --emit DIR), built on the device the way the
 * library builds it: DIR/<family>.cl (the source as clCreateProgramWithSource gets it) with the
 * row's options through fa_cl__program_get, the sm_90a families through the PTX retargeting, and
 * -cl-nv-verbose; the report is ptxas's lines of the program the library would launch. Run by
 * scripts/nv_ptxas_report.sh --driver (which says how to compare two revisions).
 *
 *   fa_cl_nv_build_report DIR [--profile NAME] [--cases a,b,...] [--jobs N] [--dry-run]
 *
 * One line per (build, kernel entry), sorted by the build's key:
 *   profile case head_dim dtype launch variant entry: registers R, stack S, spill stores T, spill loads L
 * or "build failed" / "no report". --dry-run: the builds it would make, without a device.
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setenv */
#endif

#include "devices/devices.h" /* the device's vendor */
#include "program/program.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 20000
#define MAX_FIELDS 17

typedef struct row {
    char *field[MAX_FIELDS]; /* builds.tsv's columns (program_options and sm90a: 16 and 17) */
    int first;               /* the first row of its (source, program options, sm90a): it is built */
    int same_as;             /* otherwise the row whose build it shares */
    char *report;            /* the report lines, each "entry: ..." (malloc'd), or NULL */
} row;

typedef struct job_list {
    fa_cl_context *ctx;
    row *rows;
    int n, next;
    pthread_mutex_t lock;
} job_list;

enum { F_PROFILE, F_VARIANT = 3, F_HEAD_DIM = 4, F_DTYPE = 5, F_SOURCE = 10, F_VENDOR = 12, F_CASE = 13,
       F_LAUNCH = 14, F_PROGRAM_OPTIONS = 15, F_SM90A = 16 };

static char *dup_str(const char *s)
{
    char *d = (char *)malloc(strlen(s) + 1);
    if (d)
        strcpy(d, s);
    return d;
}

/* Append "text" to *out (a growing string). */
static void append(char **out, const char *text)
{
    const size_t a = *out ? strlen(*out) : 0, b = strlen(text);
    char *s = (char *)realloc(*out, a + b + 1);
    if (!s)
        return;
    memcpy(s + a, text, b + 1);
    *out = s;
}

/* ptxas's lines in a build log, one report line per entry:
 *   ptxas info    : Compiling entry function 'fa_forward' for 'sm_90a'
 *   ptxas info    : Function properties for fa_forward
 *       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 168 registers, 384 bytes cmem[0] */
static char *parse_log(const char *log)
{
    char *out = NULL, entry[128] = "", line[256];
    long stack = -1, stores = -1, loads = -1;
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), p);
        p = e ? e + 1 : p + n;
        const char *q;
        long regs;
        if ((q = strstr(line, "Compiling entry function '")) != NULL) {
            sscanf(q + strlen("Compiling entry function '"), "%127[^']", entry);
            stack = stores = loads = -1;
        } else if (strstr(line, "bytes stack frame")) {
            sscanf(line, " %ld bytes stack frame, %ld bytes spill stores, %ld bytes spill loads", &stack, &stores,
                   &loads);
        } else if ((q = strstr(line, "Used ")) != NULL && sscanf(q, "Used %ld registers", &regs) == 1 && entry[0]) {
            char r[256];
            snprintf(r, sizeof r, "%s: registers %ld, stack %ld, spill stores %ld, spill loads %ld\n", entry, regs,
                     stack, stores, loads);
            append(&out, r);
            entry[0] = '\0';
        }
    }
    return out;
}

static void build_one(fa_cl_context *ctx, row *r)
{
    const char *files[1] = {r->field[F_SOURCE]};
    cl_program prog = NULL;
    fa_cl_status st = fa_cl__program_get(ctx, files, 1, r->field[F_PROGRAM_OPTIONS], atoi(r->field[F_SM90A]), &prog);
    if (st != FA_CL_SUCCESS) {
        const char *why = fa_cl_last_error(ctx);
        const char *nl = why ? strchr(why, '\n') : NULL;
        char msg[300];
        snprintf(msg, sizeof msg, "build failed: %.*s\n", (int)(nl ? nl - why : (why ? (ptrdiff_t)strlen(why) : 0)),
                 why ? why : "");
        append(&r->report, msg);
        return;
    }
    size_t size = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS &&
        (log = (char *)calloc(size + 1, 1)) != NULL)
        clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
    r->report = parse_log(log);
    if (!r->report)
        append(&r->report, "no report: the build log has no ptxas lines (not NVIDIA's compiler?)\n");
    free(log);
    clReleaseProgram(prog);
}

static void *worker(void *arg)
{
    job_list *j = (job_list *)arg;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        while (j->next < j->n && !j->rows[j->next].first)
            j->next++;
        const int i = j->next++;
        pthread_mutex_unlock(&j->lock);
        if (i >= j->n)
            return NULL;
        build_one(j->ctx, &j->rows[i]);
    }
}

static int in_list(const char *list, const char *word)
{
    const size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        const size_t m = e ? (size_t)(e - p) : strlen(p);
        if (m == n && strncmp(p, word, n) == 0)
            return 1;
        p = e ? e + 1 : p + m;
    }
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    const row *x = (const row *)a, *y = (const row *)b;
    static const int order[] = {F_PROFILE, F_CASE, F_HEAD_DIM, F_DTYPE, F_LAUNCH};
    for (int i = 0; i < 5; i++) {
        const int f = order[i];
        const int c = f == F_HEAD_DIM ? atoi(x->field[f]) - atoi(y->field[f]) : strcmp(x->field[f], y->field[f]);
        if (c)
            return c;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *profile = "nvidia-h100", *cases = NULL;
    int jobs = 4, dry = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
            profile = argv[++i];
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = argv[++i];
        else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
            jobs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dry-run") == 0)
            dry = 1;
        else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            fprintf(stderr, "usage: fa_cl_nv_build_report DIR [--profile NAME] [--cases a,b,...] [--jobs N] "
                            "[--dry-run]\n");
            return 2;
        }
    }
    if (!dir || jobs < 1) {
        fprintf(stderr, "usage: fa_cl_nv_build_report DIR [--profile NAME] [--cases a,b,...] [--jobs N] [--dry-run]\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/builds.tsv", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fa_cl_nv_build_report: cannot read %s (fa_cl_info --profile all --emit DIR writes it)\n",
                path);
        return 2;
    }
    static char line[1 << 16];
    row *rows = (row *)calloc(MAX_ROWS, sizeof *rows);
    int n = 0, header = 1;
    while (rows && fgets(line, sizeof line, f) && n < MAX_ROWS) {
        line[strcspn(line, "\n")] = '\0';
        char *fields[MAX_FIELDS] = {0};
        int nf = 0;
        for (char *p = line; nf < MAX_FIELDS;) {
            fields[nf++] = p;
            char *t = strchr(p, '\t');
            if (!t)
                break;
            *t = '\0';
            p = t + 1;
        }
        if (header) {
            header = 0;
            if (nf < MAX_FIELDS || strcmp(fields[F_PROGRAM_OPTIONS], "program_options") != 0) {
                fprintf(stderr, "fa_cl_nv_build_report: %s has no program_options column: an fa_cl_info from before "
                                "it was added wrote it\n", path);
                return 2;
            }
            continue;
        }
        if (nf < MAX_FIELDS || strcmp(fields[F_VENDOR], "1") != 0 || strcmp(fields[F_PROFILE], profile) != 0 ||
            (cases && !in_list(cases, fields[F_CASE])))
            continue;
        for (int k = 0; k < MAX_FIELDS; k++)
            rows[n].field[k] = dup_str(fields[k]);
        n++;
    }
    fclose(f);
    if (!rows || n == 0) {
        fprintf(stderr, "fa_cl_nv_build_report: no vendor build of profile %s%s%s in %s\n", profile,
                cases ? " in cases " : "", cases ? cases : "", path);
        return 2;
    }
    qsort(rows, (size_t)n, sizeof *rows, key_cmp);
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        rows[i].first = 1;
        for (int k = 0; k < i && rows[i].first; k++)
            if (rows[k].first && strcmp(rows[k].field[F_SOURCE], rows[i].field[F_SOURCE]) == 0 &&
                strcmp(rows[k].field[F_PROGRAM_OPTIONS], rows[i].field[F_PROGRAM_OPTIONS]) == 0 &&
                strcmp(rows[k].field[F_SM90A], rows[i].field[F_SM90A]) == 0) {
                rows[i].first = 0;
                rows[i].same_as = k;
            }
        distinct += rows[i].first;
        snprintf(path, sizeof path, "%s/%s", dir, rows[i].field[F_SOURCE]);
        FILE *s = fopen(path, "r");
        if (!s) {
            fprintf(stderr, "fa_cl_nv_build_report: %s is missing\n", path);
            return 2;
        }
        fclose(s);
    }
    fprintf(stderr, "fa_cl_nv_build_report: %d builds of %s (%d distinct programs) from %s\n", n, profile, distinct,
            dir);
    if (dry) {
        for (int i = 0; i < n; i++)
            if (rows[i].first)
                printf("%s %s %s %s %s %s: %s%s\n", rows[i].field[F_PROFILE], rows[i].field[F_CASE],
                       rows[i].field[F_HEAD_DIM], rows[i].field[F_DTYPE], rows[i].field[F_LAUNCH],
                       rows[i].field[F_VARIANT], rows[i].field[F_PROGRAM_OPTIONS],
                       atoi(rows[i].field[F_SM90A]) ? " (sm_90a)" : "");
        return 0;
    }
    /* the library reads these at context creation: the emitted sources, ptxas's report, no cache */
    setenv("FA_CL_KERNEL_DIR", dir, 1);
    setenv("FA_CL_BUILD_OPTIONS", "-cl-nv-verbose", 1);
    setenv("FA_CL_CACHE_DIR", "off", 1);
    unsetenv("FA_CL_DEBUG_BUILD_LOG");
    fa_cl_context *ctx = NULL;
    if (fa_cl_context_create_default(&ctx) != FA_CL_SUCCESS) {
        fprintf(stderr, "fa_cl_nv_build_report: %s\n", fa_cl_last_error(NULL));
        return 1;
    }
    fa_cl__device_traits traits;
    fa_cl__device_traits_query(ctx->device, &ctx->props, &traits);
    if (traits.vendor != FA_CL_VENDOR_NVIDIA)
        fprintf(stderr, "fa_cl_nv_build_report: %s is not an NVIDIA device: expect build failures\n", ctx->props.name);
    job_list j = {ctx, rows, n, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t threads[64];
    const int nt = jobs < 64 ? jobs : 64;
    int started = 0;
    for (int t = 0; t < nt; t++)
        started += pthread_create(&threads[started], NULL, worker, &j) == 0;
    if (started == 0)
        worker(&j);
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const char *rep = rows[i].first ? rows[i].report : rows[rows[i].same_as].report;
        failed += !rep || strstr(rep, "build failed") != NULL;
        for (const char *p = rep ? rep : "no report\n"; *p;) {
            const char *e = strchr(p, '\n');
            printf("%s %s %s %s %s %s %.*s\n", rows[i].field[F_PROFILE], rows[i].field[F_CASE],
                   rows[i].field[F_HEAD_DIM], rows[i].field[F_DTYPE], rows[i].field[F_LAUNCH], rows[i].field[F_VARIANT],
                   (int)(e ? e - p : (ptrdiff_t)strlen(p)), p);
            p = e ? e + 1 : p + strlen(p);
        }
    }
    fa_cl_context_release(ctx);
    return failed ? 1 : 0;
}
