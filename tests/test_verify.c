/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Verification at first use (fa_cl__kernel_family.verify_first_use, src/plan/verify.c), through
 * families of the test's own (fa_cl__registry_push_test_family): both are the portable kernel under
 * another name, tried first. "test-wrong" reads V as another storage type (wrong values, in bounds:
 * the kind of error a wrong fragment layout gives, caught the same way); its first plan on the
 * device must run the check, catch it, turn the family off with one note asking for a report, and
 * keep the verdict in the program cache, where a second context finds it without checking again.
 * "test-right" must pass, be planned, and its verdict be reused the same way.
 */
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* mkdtemp */
#endif
#include "kernels/family.h"
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tu_tally tally = {"verify", 0, 0};

/* how many times each family's plan was asked for: 2 on a context that checks (the plan's own and
 * the check's), 1 where a verdict is known */
static int plans_wrong, plans_right;
/* the storage type test-wrong reads V as: another 16-bit type, or f16 for f32 (half the bytes: in
 * bounds), set by its plan for its options */
static int wrong_v_type;

static fa_cl_status portable_as(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out,
                                char *msg, size_t msg_size, const char *name)
{
    const fa_cl_status st = fa_cl__kernel_by_id(FA_CL_KERNEL_PORTABLE)->plan(lim, req, out, msg, msg_size);
    out->variant = FA_CL_KERNEL_TEST;
    out->kernel = name;
    return st;
}

static fa_cl_status plan_wrong(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out,
                               char *msg, size_t msg_size)
{
    plans_wrong++;
    wrong_v_type = req->dtype == FA_CL_F16 ? FA_CL_BF16 : FA_CL_F16;
    return portable_as(lim, req, out, msg, msg_size, "test-wrong");
}

static fa_cl_status plan_right(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out,
                               char *msg, size_t msg_size)
{
    plans_right++;
    return portable_as(lim, req, out, msg, msg_size, "test-right");
}

/* the portable kernel's options */
static int options_right(const fa_cl__tiles *t, char *out, size_t n)
{
    return fa_cl__kernel_by_id(FA_CL_KERNEL_PORTABLE)->options(t, out, n);
}

/* and V read as another storage type (in bounds, wrong values) */
static int options_wrong(const fa_cl__tiles *t, char *out, size_t n)
{
    const int len = options_right(t, out, n);
    const int more = len < 0 ? -1 : fa_cl__options_printf(out + len, n - (size_t)len, " -DFA_V_DTYPE=%d", wrong_v_type);
    return more < 0 ? -1 : len + more;
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED};
#define TEST_FAMILY(label, plan_fn, options_fn)                                                          \
    {.name = label, .id = FA_CL_KERNEL_TEST, .op = FA_CL_OP_FORWARD, .entry = "fa_forward",                  \
     .summary = "a test's family checked at first use", .takes = {FA_CL_DTYPES_ALL, 0, 0, 256},  \
     .needs = {.device = FA_CL_ANY_DEVICE}, .tune = tune, .ntune = 1, .plan = plan_fn, .options = options_fn, \
     .unroll_max_dim = FA_CL_UNROLL_MAX_DIM, .verify_first_use = 1}
/* (their files are the portable kernel's, set in main) */
static fa_cl__kernel_family wrong = TEST_FAMILY("test-wrong", plan_wrong, options_wrong);
static fa_cl__kernel_family right = TEST_FAMILY("test-right", plan_right, options_right);

static int notes_naming(fa_cl_context *ctx, const char *what)
{
    int n = 0;
    for (const char *p = fa_cl_context_notes(ctx); (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

/* A causal plan of head_dim d; the kernel it took ("-" on failure). */
static const char *plan_kernel(fa_cl_context *ctx, int d, fa_cl_dtype dtype)
{
    fa_cl_attention_desc desc;
    fa_cl_attention_desc_init(&desc, 1, 2, 40, 40, d, dtype);
    desc.causal = 1;
    fa_cl_plan *p = NULL;
    fa_cl_plan_info info;
    const char *k = fa_cl_plan_create(ctx, &desc, &p) == FA_CL_SUCCESS && fa_cl_plan_get_info(p, &info) == FA_CL_SUCCESS
                        ? info.kernel
                        : "-";
    fa_cl_plan_release(p);
    return k;
}

static void remove_dir(const char *path)
{
    DIR *d = opendir(path);
    char file[600];
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(file, sizeof file, "%s/%s", path, e->d_name);
            unlink(file);
        }
    if (d)
        closedir(d);
    rmdir(path);
}

int main(void)
{
    char dir[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fa_cl_test_verify.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        printf("verify: mkdtemp(%s) failed\n", dir);
        return 1;
    }
    setenv("FA_CL_CACHE_DIR", dir, 1);
    const fa_cl__kernel_family *portable = fa_cl__kernel_by_id(FA_CL_KERNEL_PORTABLE);
    wrong.files = right.files = portable->files;
    wrong.nfiles = right.nfiles = portable->nfiles;

    /* a wrong family: caught on the first plan, off, one note; later plans do not try it */
    fa_cl__registry_push_test_family(&wrong);
    fa_cl_context *ctx = NULL;
    int rc = tu_context(&ctx);
    if (rc != 0)
        return rc;
    const char *k = plan_kernel(ctx, 16, FA_CL_F32);
    tu_expect(&tally, strcmp(k, "test-wrong") != 0 && strcmp(k, "-") != 0 && plans_wrong == 2 &&
                          notes_naming(ctx, "family test-wrong") == 1 && notes_naming(ctx, "differed") == 1,
              "a wrong family: checked (%d plans), caught and off: the plan took %s, %d note(s) naming it", plans_wrong,
              k, notes_naming(ctx, "family test-wrong"));
    k = plan_kernel(ctx, 32, FA_CL_F16);
    tu_expect(&tally, strcmp(k, "test-wrong") != 0 && plans_wrong == 2 && notes_naming(ctx, "family test-wrong") == 1,
              "the next plan: not tried again (%d plans), no second note: %s", plans_wrong, k);
    fa_cl_context_release(ctx);

    /* a second context: the verdict from the cache, no check, the note again */
    plans_wrong = 0;
    if ((rc = tu_context(&ctx)) != 0)
        return rc;
    k = plan_kernel(ctx, 24, FA_CL_F32);
    tu_expect(&tally, strcmp(k, "test-wrong") != 0 && strcmp(k, "-") != 0 && plans_wrong == 1 &&
                          notes_naming(ctx, "verdict kept") == 1,
              "a second context: the cached verdict reused (%d plans, check not run), off: %s, notes: %s", plans_wrong,
              k, fa_cl_context_notes(ctx));
    fa_cl_context_release(ctx);

    /* a correct family: checked once, planned; the verdict reused by the next context */
    fa_cl__registry_push_test_family(&right);
    for (int round = 0; round < 2; round++) {
        plans_right = 0;
        if ((rc = tu_context(&ctx)) != 0)
            return rc;
        k = plan_kernel(ctx, 16 + 8 * round, FA_CL_BF16);
        tu_expect(&tally, strcmp(k, "test-right") == 0 && plans_right == 2 - round && notes_naming(ctx, "family test-right") == 0,
                  "a correct family, context %d: %s (%d plans: %s), planned: %s", round + 1,
                  round ? "the cached verdict" : "checked", plans_right, round ? "1 expected" : "2 expected", k);
        if (strcmp(k, "test-right") != 0)
            printf("  last error: %.2000s\n  notes: %s\n", fa_cl_last_error(ctx), fa_cl_context_notes(ctx));
        fa_cl_context_release(ctx);
    }
    fa_cl__registry_push_test_family(NULL);
    remove_dir(dir);
    return tu_finish(&tally);
}
