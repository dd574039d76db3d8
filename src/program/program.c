/* SPDX-License-Identifier: Apache-2.0 */
/* Program builds and the per-context program cache (keyed by source text and build options); misses
 * go to the on-disk binary cache (binary_cache.c) before compiling from source. */
#include "program/program.h"
#include "program/ptx_retarget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kernels of released plans wait here for the next plan of the same program: creating and
 * destroying a cl_kernel per plan costs some drivers memory they keep (PoCL: ~4.7 KB a kernel). */
#define FA_CL_KERNEL_POOL 4

struct fa_cl__program_entry {
    uint64_t source_hash;
    char *options;
    cl_program program;
    cl_kernel pool[FA_CL_KERNEL_POOL]; /* guarded by ctx->lock */
    int pooled;
    fa_cl__program_entry *next;
};

/* FNV-1a, enough to tell kernel texts apart in the cache. */
static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* FA_CL_DEBUG_BUILD_LOG: compilers put register and spill reports here (-cl-nv-verbose). */
static void print_build_log(fa_cl_context *ctx, cl_program prog, const char *options)
{
    size_t size = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS &&
        (log = (char *)calloc(size + 1, 1)) != NULL)
        clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
    fprintf(stderr, "fa_cl: build log for \"%s\":\n%s\n", options, log ? log : "");
    free(log);
}

static fa_cl_status build_failed(fa_cl_context *ctx, cl_program prog, cl_int err, const char *options)
{
    size_t size = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS && size > 0) {
        log = (char *)malloc(size + 1);
        if (log && clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, size, log, NULL) != CL_SUCCESS) {
            free(log);
            log = NULL;
        }
        if (log)
            log[size] = '\0';
    }
    fa_cl_status st = fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "kernel build failed (%s) with options \"%s\":\n%s",
                                  fa_cl__cl_error_name(err), options, log ? log : "(no build log)");
    free(log);
    return st;
}

/* Under ctx->lock: the entry of (h, options), moved to the front (most recently used), or NULL. */
static fa_cl__program_entry *find_entry(fa_cl_context *ctx, uint64_t h, const char *options)
{
    for (fa_cl__program_entry **pp = &ctx->programs; *pp; pp = &(*pp)->next) {
        fa_cl__program_entry *e = *pp;
        if (e->source_hash == h && strcmp(e->options, options) == 0) {
            *pp = e->next;
            e->next = ctx->programs;
            ctx->programs = e;
            return e;
        }
    }
    return NULL;
}

static void free_entry(fa_cl__program_entry *e)
{
    for (int i = 0; i < e->pooled; i++)
        clReleaseKernel(e->pool[i]);
    clReleaseProgram(e->program); /* plans' kernels keep the program alive as long as they need it */
    free(e->options);
    free(e);
}

/* Under ctx->lock: unlink the least recently used entry if the cache holds more than
 * FA_CL_PROGRAM_CACHE_MAX; the caller frees it outside the lock. */
static fa_cl__program_entry *evict_entry(fa_cl_context *ctx)
{
    if (ctx->program_count <= FA_CL_PROGRAM_CACHE_MAX)
        return NULL;
    fa_cl__program_entry **pp = &ctx->programs;
    while ((*pp)->next)
        pp = &(*pp)->next;
    fa_cl__program_entry *e = *pp;
    *pp = NULL;
    ctx->program_count--;
    return e;
}

/* -DFA_WG_MAXNREG=n in a program's options: the register count its entry declares (.maxnreg; a
 * kernel that moves registers between warpgroups with setmaxnreg needs it), 0 = none */
static int options_maxnreg(const char *options)
{
    static const char key[] = "-DFA_WG_MAXNREG=";
    const char *m = strstr(options, key);
    return m ? atoi(m + sizeof key - 1) : 0;
}

/* The sm_90a build of a program built from source for sm_90 (ptx_retarget.h): its PTX binary,
 * retargeted, built again from that binary. NULL with the reason in ctx's last error. */
static cl_program build_sm90a(fa_cl_context *ctx, cl_program src_prog, const char *options, fa_cl_status *st)
{
    size_t len = 0;
    unsigned char *ptx = NULL;
    char *patched = NULL, msg[256] = "";
    size_t patched_len = 0;
    cl_program prog = NULL;
    cl_int err = clGetProgramInfo(src_prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL);
    if (err == CL_SUCCESS && len > 0 && (ptx = (unsigned char *)malloc(len)) != NULL)
        err = clGetProgramInfo(src_prog, CL_PROGRAM_BINARIES, sizeof ptx, &ptx, NULL);
    if (err != CL_SUCCESS || !ptx) {
        *st = ptx ? fa_cl__fail_cl(ctx, err, "clGetProgramInfo(CL_PROGRAM_BINARIES) for the sm_90a build")
                  : fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "out of memory for a program binary");
        goto done;
    }
    /* the binary may end in a NUL: the PTX is the text before it */
    const unsigned char *nul = (const unsigned char *)memchr(ptx, 0, len);
    const size_t text_len = nul ? (size_t)(nul - ptx) : len;
    *st = fa_cl__ptx_retarget_sm90a((const char *)ptx, text_len, options_maxnreg(options), &patched, &patched_len, NULL, msg, sizeof msg);
    if (*st != FA_CL_SUCCESS) {
        *st = fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "sm_90a build: the compiler's PTX was not retargeted: %s", msg);
        goto done;
    }
    const unsigned char *bin = (const unsigned char *)patched;
    size_t bin_len = patched_len + 1; /* with its NUL, as the driver returns PTX */
    cl_int status = CL_SUCCESS;
    prog = clCreateProgramWithBinary(ctx->cl_ctx, 1, &ctx->device, &bin_len, &bin, &status, &err);
    if (!prog || err != CL_SUCCESS || status != CL_SUCCESS) {
        *st = fa_cl__fail(ctx, FA_CL_ERROR_BUILD_FAILED, "sm_90a build: clCreateProgramWithBinary: %s",
                          fa_cl__cl_error_name(err != CL_SUCCESS ? err : status));
        if (prog)
            clReleaseProgram(prog);
        prog = NULL;
        goto done;
    }
    err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    if (ctx->env.print_build_log)
        print_build_log(ctx, prog, options);
    if (err != CL_SUCCESS) {
        *st = build_failed(ctx, prog, err, options);
        clReleaseProgram(prog);
        prog = NULL;
    }
done:
    free(ptx);
    free(patched);
    return prog;
}

fa_cl_status fa_cl__program_get(fa_cl_context *ctx, const char *const *files, int nfiles, const char *options,
                                int sm90a, cl_program *out)
{
    *out = NULL;
    /* a family's units (nvidia-wgmma: 22 files) */
    enum { MAX_FILES = 32 };
    const char *texts[MAX_FILES];
    char *owned[MAX_FILES] = {0};
    fa_cl_status st = FA_CL_SUCCESS;
    if (nfiles > MAX_FILES)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: too many kernel files");
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < nfiles && st == FA_CL_SUCCESS; i++) {
        st = fa_cl__kernel_source(ctx, files[i], &texts[i], &owned[i]);
        if (st == FA_CL_SUCCESS)
            h = hash_text(h, texts[i]);
    }

    char full[4096], with_patch[600];
    if (st == FA_CL_SUCCESS && fa_cl__program_options(options, sm90a, with_patch, sizeof with_patch) < 0)
        st = fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "build options longer than %zu characters",
                         sizeof with_patch - 1);
    if (st == FA_CL_SUCCESS) {
        if (fa_cl__full_build_options(with_patch, ctx->env.build_options, full, sizeof full) < 0)
            st = fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "build options longer than %zu characters",
                             sizeof full - 1);
    }

    if (st == FA_CL_SUCCESS) {
        fa_cl__lock_acquire(&ctx->lock);
        fa_cl__program_entry *e = find_entry(ctx, h, full);
        if (e) {
            clRetainProgram(e->program);
            *out = e->program;
        }
        fa_cl__lock_release(&ctx->lock);
    }

    if (st == FA_CL_SUCCESS && !*out) {
        /* FA_CL_DEBUG_BUILD_LOG wants the compiler's log, which a cached binary does not have */
        cl_program prog = ctx->env.print_build_log ? NULL : fa_cl__binary_cache_load(ctx, texts, nfiles, full);
        cl_int err = CL_SUCCESS;
        if (!prog) {
            prog = clCreateProgramWithSource(ctx->cl_ctx, (cl_uint)nfiles, texts, NULL, &err);
            if (!prog) {
                st = fa_cl__fail_cl(ctx, err, "clCreateProgramWithSource");
            } else {
                /* Builds run outside the lock: they can take seconds, and other threads may plan meanwhile. */
                err = clBuildProgram(prog, 1, &ctx->device, full, NULL, NULL);
                /* a failed build's log too: the failed-build rule hides the failure where a family follows */
                if (ctx->env.print_build_log)
                    print_build_log(ctx, prog, full);
                if (err != CL_SUCCESS) {
                    st = build_failed(ctx, prog, err, full);
                    clReleaseProgram(prog);
                    prog = NULL;
                } else if (sm90a) {
                    cl_program retargeted = build_sm90a(ctx, prog, full, &st);
                    clReleaseProgram(prog);
                    prog = retargeted;
                }
                if (prog) {
                    fa_cl__lock_acquire(&ctx->lock);
                    ctx->stats.built_from_source++;
                    fa_cl__lock_release(&ctx->lock);
                    fa_cl__binary_cache_store(ctx, texts, nfiles, full, prog);
                }
            }
        }
        if (prog) {
            *out = prog;
            fa_cl__program_entry *e = (fa_cl__program_entry *)calloc(1, sizeof *e);
            char *opts = e ? (char *)malloc(strlen(full) + 1) : NULL;
            if (!e || !opts) {
                free(e); /* still usable, just not cached */
            } else {
                strcpy(opts, full);
                e->source_hash = h;
                e->options = opts;
                e->program = prog;
                fa_cl__lock_acquire(&ctx->lock);
                /* another thread may have built the same program meanwhile: keep one entry */
                fa_cl__program_entry *x = find_entry(ctx, h, full), *evicted = NULL;
                if (x) {
                    clRetainProgram(x->program);
                    *out = x->program;
                } else {
                    clRetainProgram(prog); /* one reference for the cache, one for the caller */
                    e->next = ctx->programs;
                    ctx->programs = e;
                    ctx->program_count++;
                    evicted = evict_entry(ctx);
                }
                fa_cl__lock_release(&ctx->lock);
                if (evicted)
                    free_entry(evicted);
                if (x) {
                    clReleaseProgram(prog);
                    free(opts);
                    free(e);
                }
            }
        }
    }
    for (int i = 0; i < nfiles; i++)
        free(owned[i]);
    return st;
}

cl_kernel fa_cl__kernel_take(fa_cl_context *ctx, cl_program prog, const char *name, cl_int *err)
{
    cl_kernel k = NULL;
    fa_cl__lock_acquire(&ctx->lock);
    for (fa_cl__program_entry *e = ctx->programs; e && !k; e = e->next) {
        if (e->program != prog)
            continue;
        /* a program may hold several entry points (the backward's three): the pooled kernel of this one */
        for (int i = e->pooled - 1; i >= 0 && !k; i--) {
            char fn[64] = "";
            if (clGetKernelInfo(e->pool[i], CL_KERNEL_FUNCTION_NAME, sizeof fn, fn, NULL) == CL_SUCCESS &&
                strcmp(fn, name) == 0) {
                k = e->pool[i];
                e->pool[i] = e->pool[--e->pooled];
            }
        }
    }
    fa_cl__lock_release(&ctx->lock);
    *err = CL_SUCCESS;
    return k ? k : clCreateKernel(prog, name, err);
}

void fa_cl__kernel_give(fa_cl_context *ctx, cl_kernel k)
{
    cl_program prog = NULL;
    if (!k)
        return;
    if (clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL) == CL_SUCCESS) {
        fa_cl__lock_acquire(&ctx->lock);
        for (fa_cl__program_entry *e = ctx->programs; e; e = e->next)
            if (e->program == prog && e->pooled < FA_CL_KERNEL_POOL) {
                e->pool[e->pooled++] = k;
                k = NULL;
                break;
            }
        fa_cl__lock_release(&ctx->lock);
    }
    if (k)
        clReleaseKernel(k);
}

void fa_cl__program_cache_clear(fa_cl_context *ctx)
{
    fa_cl__program_entry *e = ctx->programs;
    while (e) {
        fa_cl__program_entry *next = e->next;
        free_entry(e);
        e = next;
    }
    ctx->programs = NULL;
    ctx->program_count = 0;
}
