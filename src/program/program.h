/* SPDX-License-Identifier: Apache-2.0 */
/* The program layer (src/program/): kernel sources, program builds and the context's program cache,
 * the on-disk binary cache. Above src/common, below everything that builds kernels. */
#ifndef FA_CL_PROGRAM_H
#define FA_CL_PROGRAM_H

#include "fa_cl_internal.h"
#include "program/build_options.h"

/* ---- kernel sources and programs (kernel_source.c, program.c) -------------------------------- */

/* Compiled programs a context keeps (each holds 1-2 MB of host memory on PoCL); the least recently
 * used goes first. Plans keep their own program alive whatever the cache drops. */
#define FA_CL_PROGRAM_CACHE_MAX 64

/* Source text of cl/<name> (e.g. "fa_forward.cl"): embedded, or read from FA_CL_KERNEL_DIR.
 * *owned is set to a heap copy the caller frees when the text came from disk (NULL otherwise).
 * The text starts with a #line directive naming cl/<name>. */
fa_cl_status fa_cl__kernel_source(fa_cl_context *ctx, const char *name, const char **text, char **owned);

/* The copy of cl/<name> embedded at build time (starting with its #line directive), or NULL. */
const char *fa_cl__embedded_text(const char *name);

/* Build (or fetch from the context cache) a program from the named cl/ files, concatenated in order,
 * with the options given (the library adds -cl-std=CL1.2 and FA_CL_BUILD_OPTIONS). sm90a: the
 * program's PTX is retargeted to sm_90a and built again (src/program/ptx_retarget.h; NVIDIA,
 * compute capability 9.0), its options gaining -DFA_PTX_SM90A. On success *out holds a reference
 * the caller releases. A build failure (any step of sm90a's) is FA_CL_ERROR_BUILD_FAILED with the
 * reason in last_error and is not cached. */
fa_cl_status fa_cl__program_get(fa_cl_context *ctx, const char *const *files, int nfiles, const char *options,
                                int sm90a, cl_program *out);

/* A kernel of a cached program: a pooled one left by a released plan, else a new one. The plan
 * gives it back with fa_cl__kernel_give (which releases it when the pool is full or the program is
 * not cached); its arguments are set again before every launch. */
cl_kernel fa_cl__kernel_take(fa_cl_context *ctx, cl_program prog, const char *name, cl_int *err);
void fa_cl__kernel_give(fa_cl_context *ctx, cl_kernel k);

/* Release every cached program (context teardown). */
void fa_cl__program_cache_clear(fa_cl_context *ctx);

/* ---- on-disk program binary cache (binary_cache.c) ------------------------------------------- */

/* Choose the cache directory at context creation (FA_CL_CACHE_DIR, $XDG_CACHE_HOME/fa_cl,
 * ~/.cache/fa_cl), create it and check it is writable; sets ctx->cache_dir, or leaves it "" and
 * says why in the notes. Never fails: without a cache, programs are built from source. */
void fa_cl__binary_cache_open(fa_cl_context *ctx);

/* A program built for ctx's device from the cached binary of (texts, options), or NULL on a miss.
 * A file that is corrupt, truncated, written for another key, or refused by the driver is ignored
 * (and noted); it is replaced by the next store. */
cl_program fa_cl__binary_cache_load(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options);

/* Write prog's binary for ctx's device to the cache: a temporary file in the cache directory,
 * renamed over the entry (atomic; concurrent writers are safe). Failures are noted, not returned. */
void fa_cl__binary_cache_store(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options,
                               cl_program prog);

/* A first-use verdict (src/plan/verify.c) beside the programs, in the same trusted files: keyed by
 * the family's sources (texts), what (the verdict's name) and ctx's device and driver. Load copies
 * the verdict's text into out (n bytes) and returns 1, or 0 when there is none (or no cache);
 * store writes one (failures noted). */
int fa_cl__verdict_load(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *what, char *out,
                        size_t n);
void fa_cl__verdict_store(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *what,
                          const char *verdict);

/* The cache file format, exposed for tests. Fields of the key, all compared byte for byte on load: */
enum {
    FA_CL_KEY_SOURCE,
    FA_CL_KEY_OPTIONS,
    FA_CL_KEY_DEVICE_NAME,
    FA_CL_KEY_DEVICE_VENDOR,
    FA_CL_KEY_DEVICE_VERSION,
    FA_CL_KEY_DRIVER_VERSION,
    FA_CL_KEY_PLATFORM_NAME,
    FA_CL_KEY_PLATFORM_VERSION,
    FA_CL_KEY_FIELDS
};

/* One entry: key fields and the program binary, as pointers into someone else's memory. */
typedef struct fa_cl__cache_entry {
    const char *field[FA_CL_KEY_FIELDS];
    size_t field_len[FA_CL_KEY_FIELDS];
    const unsigned char *binary;
    size_t binary_len;
} fa_cl__cache_entry;

/* The file's bytes for an entry (malloc'd, *size set), or NULL when out of memory. */
unsigned char *fa_cl__cache_entry_encode(const fa_cl__cache_entry *e, size_t *size);
/* Parse a file's bytes: magic, format version, field lengths within the file, binary length equal
 * to what is left, binary checksum. Returns 0 (out points into data) or -1 with *why set. */
int fa_cl__cache_entry_decode(const unsigned char *data, size_t size, fa_cl__cache_entry *out, const char **why);
/* The entry's file name: two independent 64-bit hashes of the key fields, in hex, + ".bin". */
void fa_cl__cache_entry_name(const fa_cl__cache_entry *e, char name[64]);

#endif /* FA_CL_PROGRAM_H */
