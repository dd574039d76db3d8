/* SPDX-License-Identifier: Apache-2.0 */
/*
 * On-disk cache of compiled programs, so that a second process does not compile the kernels again.
 *
 * One file per (kernel source, build options, device name, vendor, device version, driver version,
 * platform name, platform version), named by two independent 64-bit hashes of those fields. The file
 * holds every field in full and is trusted only if all of them match, so a hash collision or a
 * file copied from another machine is ignored rather than loaded:
 *
 *   "FA_CL_PB"  u32 format version  u32 field count
 *   field count x (u32 length, bytes)
 *   u64 binary length  u64 FNV-1a 64 of the binary  binary      (integers little-endian)
 *
 * Files are written to a temporary name in the same directory and renamed over the entry, which is
 * atomic: a reader sees the old file or the new one, never half of one, and concurrent writers of
 * the same entry each leave a valid file.
 *
 * The same files hold first-use verdicts (src/plan/verify.c): the kernel source field is the
 * family's sources, the build options field names the verdict ("first-use verdict <family>"), the
 * payload is the verdict's text instead of a binary.
 *
 * Trust: every key field is public, so a file with the right key and someone else's binary inside
 * would be run. A binary is therefore loaded only from files that nobody but this user could have
 * written (docs/design.md, "The program cache"): the cache directory is owned by the effective uid
 * and writable by nobody else, every directory above it is owned by this user or root and writable
 * by nobody else (sticky ones like /tmp and the user's own private group excepted), and the entry is
 * a regular file owned by the effective uid, not writable by group or others, opened without
 * following a symlink and without blocking. Directories are created 0700 and files 0600 whatever
 * the umask. Anything else is not loaded and the notes say why.
 */
#if !defined(_WIN32) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* mkstemp, realpath, getgrgid_r, S_ISVTX */
#endif

#include "program/program.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(_WIN32)
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#endif

#define CACHE_MAGIC "FA_CL_PB"
#define CACHE_FORMAT_VERSION 1u
/* Larger files are not read (no driver's program binary for these kernels comes near). */
#define CACHE_MAX_FILE_BYTES ((size_t)256 << 20)

static const char *const field_names[FA_CL_KEY_FIELDS] = {
    "kernel source", "build options", "device name", "device vendor", "device version", "driver version",
    "platform name", "platform version"};

/* ---- hashing ---------------------------------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* A second hash unrelated to FNV: a multiply-rotate over bytes, finished with splitmix64's mixer. */
static uint64_t mix_bytes(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (p[i] + 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
        h = (h << 31) | (h >> 33);
    }
    return h;
}

static uint64_t mix_final(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fa_cl__cache_entry_name(const fa_cl__cache_entry *e, char name[64])
{
    /* the format version is hashed too: a new format never reads an old file's name */
    uint64_t h1 = 14695981039346656037ull ^ CACHE_FORMAT_VERSION, h2 = 0x6a09e667f3bcc909ull + CACHE_FORMAT_VERSION;
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        /* length first, so that fields cannot run into each other ("ab"+"c" vs "a"+"bc") */
        unsigned char len[8];
        for (int b = 0; b < 8; b++)
            len[b] = (unsigned char)((uint64_t)e->field_len[i] >> (8 * b));
        h1 = fnv1a(fnv1a(h1, len, 8), (const unsigned char *)e->field[i], e->field_len[i]);
        h2 = mix_bytes(mix_bytes(h2, len, 8), (const unsigned char *)e->field[i], e->field_len[i]);
    }
    snprintf(name, 64, "%016llx%016llx.bin", (unsigned long long)h1, (unsigned long long)mix_final(h2));
}

/* ---- the file format -------------------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int b = 0; b < 4; b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int b = 3; b >= 0; b--)
        v = (v << 8) | p[b];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = (v << 8) | p[b];
    return v;
}

unsigned char *fa_cl__cache_entry_encode(const fa_cl__cache_entry *e, size_t *size)
{
    size_t n = 8 + 4 + 4 + 8 + 8 + e->binary_len;
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        if (e->field_len[i] > 0xffffffffu)
            return NULL;
        n += 4 + e->field_len[i];
    }
    unsigned char *buf = (unsigned char *)malloc(n), *p = buf;
    if (!buf)
        return NULL;
    memcpy(p, CACHE_MAGIC, 8), p += 8;
    put_u32(p, CACHE_FORMAT_VERSION), p += 4;
    put_u32(p, FA_CL_KEY_FIELDS), p += 4;
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        put_u32(p, (uint32_t)e->field_len[i]), p += 4;
        if (e->field_len[i])
            memcpy(p, e->field[i], e->field_len[i]);
        p += e->field_len[i];
    }
    put_u64(p, e->binary_len), p += 8;
    put_u64(p, fnv1a(14695981039346656037ull, e->binary, e->binary_len)), p += 8;
    if (e->binary_len)
        memcpy(p, e->binary, e->binary_len);
    *size = n;
    return buf;
}

int fa_cl__cache_entry_decode(const unsigned char *data, size_t size, fa_cl__cache_entry *out, const char **why)
{
    memset(out, 0, sizeof *out);
    size_t at = 16;
    if (size < at || memcmp(data, CACHE_MAGIC, 8) != 0) {
        *why = "not an fa_cl program cache file (bad magic)";
        return -1;
    }
    if (get_u32(data + 8) != CACHE_FORMAT_VERSION || get_u32(data + 12) != FA_CL_KEY_FIELDS) {
        *why = "another format version";
        return -1;
    }
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        if (size - at < 4) {
            *why = "truncated (in the key)";
            return -1;
        }
        size_t len = get_u32(data + at);
        at += 4;
        if (size - at < len) {
            *why = "truncated (in the key)";
            return -1;
        }
        out->field[i] = (const char *)data + at;
        out->field_len[i] = len;
        at += len;
    }
    if (size - at < 16) {
        *why = "truncated (before the binary)";
        return -1;
    }
    uint64_t len = get_u64(data + at), sum = get_u64(data + at + 8);
    at += 16;
    if (len != (uint64_t)(size - at)) {
        *why = len > (uint64_t)(size - at) ? "truncated (in the binary)" : "trailing bytes after the binary";
        return -1;
    }
    out->binary = data + at;
    out->binary_len = (size_t)len;
    if (fnv1a(14695981039346656037ull, out->binary, out->binary_len) != sum) {
        *why = "the binary's checksum does not match (corrupt)";
        return -1;
    }
    return 0;
}

/* ---- the key of a program --------------------------------------------------------------------- */

/* Fills e's key fields from ctx's device and the program; *source is a malloc'd concatenation of
 * the texts the caller frees. Returns 0, or -1 when out of memory. */
static int make_key(const fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options,
                    fa_cl__cache_entry *e, char **source)
{
    size_t total = 0;
    for (int i = 0; i < ntexts; i++)
        total += strlen(texts[i]);
    char *src = (char *)malloc(total + 1), *p = src;
    if (!src)
        return -1;
    for (int i = 0; i < ntexts; i++) {
        size_t n = strlen(texts[i]);
        memcpy(p, texts[i], n);
        p += n;
    }
    *p = '\0';
    const fa_cl__device_props *d = &ctx->props;
    const char *f[FA_CL_KEY_FIELDS] = {src, options, d->name, d->vendor, d->device_version, d->driver_version,
                                       d->platform_name, d->platform_version};
    memset(e, 0, sizeof *e);
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        e->field[i] = f[i];
        e->field_len[i] = strlen(f[i]);
    }
    *source = src;
    return 0;
}

#if defined(_WIN32)

void fa_cl__binary_cache_open(fa_cl_context *ctx)
{
    ctx->cache_dir[0] = '\0';
    fa_cl__note(ctx, "program cache disabled: not implemented on Windows yet");
}

cl_program fa_cl__binary_cache_load(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options)
{
    (void)ctx, (void)texts, (void)ntexts, (void)options;
    return NULL;
}

void fa_cl__binary_cache_store(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options,
                               cl_program prog)
{
    (void)ctx, (void)texts, (void)ntexts, (void)options, (void)prog;
}

int fa_cl__verdict_load(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *what, char *out,
                        size_t n)
{
    (void)ctx, (void)texts, (void)ntexts, (void)what, (void)out, (void)n;
    return 0;
}

void fa_cl__verdict_store(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *what,
                          const char *verdict)
{
    (void)ctx, (void)texts, (void)ntexts, (void)what, (void)verdict;
}

#else

/* "Permission denied (EACCES)": the words for people, the name for searching. */
static void describe_errno(int err, char *buf, size_t size)
{
    static const struct {
        int code;
        const char *name;
    } names[] = {{EACCES, "EACCES"}, {EPERM, "EPERM"},   {EROFS, "EROFS"},   {ENOTDIR, "ENOTDIR"},
                 {ENOENT, "ENOENT"}, {ENOSPC, "ENOSPC"}, {EEXIST, "EEXIST"}, {ENAMETOOLONG, "ENAMETOOLONG"},
                 {EISDIR, "EISDIR"}, {EIO, "EIO"},       {EMFILE, "EMFILE"}, {ELOOP, "ELOOP"},
                 {EFBIG, "EFBIG"},   {ENOMEM, "ENOMEM"}, {EDQUOT, "EDQUOT"}};
    const char *name = "errno";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == err)
            name = names[i].name;
    snprintf(buf, size, "%s (%s)", strerror(err), name);
}

/* mkdir: 0700 whatever the umask (chmod, as a umask can also take the owner's bits away). */
static int make_private_dir(const char *p)
{
    if (mkdir(p, 0700) != 0)
        return errno;
    return chmod(p, 0700) != 0 ? errno : 0;
}

/* mkdir -p; the directories it creates are 0700. Returns 0 or an errno value. */
static int make_dirs(const char *path)
{
    char p[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof p)
        return ENAMETOOLONG;
    memcpy(p, path, n + 1);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        int err = make_private_dir(p);
        *s = '/';
        if (err && err != EEXIST)
            return err;
    }
    int err = make_private_dir(p);
    if (err && err != EEXIST)
        return err;
    struct stat st;
    if (stat(p, &st) != 0)
        return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* Create and delete a file in dir: the only test of writability that holds for root, ACLs and
 * read-only mounts alike. Returns 0 or an errno value. */
static int probe_writable(const char *dir)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/.probe-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return errno;
    close(fd);
    unlink(path);
    return 0;
}

/* The effective gid is a group of this user alone (the user-private-group scheme of most Linux
 * distributions: umask 002 leaves the user's directories group-writable). */
static int private_group(gid_t gid)
{
    if (gid != getegid())
        return 0;
    struct group gr, *found = NULL;
    char buf[4096];
    return getgrgid_r(gid, &gr, buf, sizeof buf, &found) == 0 && found && (!gr.gr_mem || !gr.gr_mem[0]);
}

/* Why dir cannot hold binaries this process may run (a message into why), or NULL when it can: see
 * the trust rule at the top of this file. */
static const char *untrusted_dir(const char *dir, char *why, size_t n)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        char e[128];
        describe_errno(errno, e, sizeof e);
        snprintf(why, n, "cannot resolve %.900s: %s", dir, e);
        return why;
    }
    const uid_t me = geteuid();
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, n, "%.900s is not a directory", real);
        return why;
    }
    if (st.st_uid != me || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(why, n, "%.900s is %s (owner uid %u, mode %03o): a binary there could be another user's", real,
                 st.st_uid != me ? "not owned by this user" : "writable by group or others", (unsigned)st.st_uid,
                 (unsigned)(st.st_mode & 07777));
        return why;
    }
    /* every directory above: nobody else may rename the cache directory and put another in its place */
    for (char *slash = strrchr(real, '/'); slash; slash = strrchr(real, '/')) {
        if (slash == real)
            slash[1] = '\0'; /* "/" itself */
        else
            *slash = '\0';
        if (stat(real, &st) != 0) {
            snprintf(why, n, "cannot stat %.900s", real);
            return why;
        }
        const int sticky = (st.st_mode & S_ISVTX) != 0;
        const int others = (st.st_mode & S_IWOTH) && !sticky;
        const int group = (st.st_mode & S_IWGRP) && !sticky && !(st.st_uid == me && private_group(st.st_gid));
        if ((st.st_uid != me && st.st_uid != 0) || others || group) {
            snprintf(why, n, "%.900s, above the cache directory, is %s (owner uid %u, mode %03o): another user could "
                     "replace the cache directory", real, others || group ? "writable by others" : "another user's",
                     (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
            return why;
        }
        if (slash == real)
            break;
    }
    return NULL;
}

void fa_cl__binary_cache_open(fa_cl_context *ctx)
{
    ctx->cache_dir[0] = '\0';
    if (ctx->env.cache_off) {
        fa_cl__note(ctx, "program cache disabled: FA_CL_CACHE_DIR=off");
        return;
    }
    char dir[1024];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (ctx->env.cache_dir[0])
        n = snprintf(dir, sizeof dir, "%s", ctx->env.cache_dir);
    else if (xdg && xdg[0] == '/') /* the XDG spec: a relative value is to be ignored */
        n = snprintf(dir, sizeof dir, "%s/fa_cl", xdg);
    else if (home && home[0])
        n = snprintf(dir, sizeof dir, "%s/.cache/fa_cl", home);
    else {
        fa_cl__note(ctx, "program cache disabled: none of FA_CL_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
        return;
    }
    if (n < 0 || (size_t)n >= sizeof dir - 64) {
        fa_cl__note(ctx, "program cache disabled: the directory name is too long");
        return;
    }
    char why[1200];
    int err = make_dirs(dir);
    if (err) {
        describe_errno(err, why, sizeof why);
        fa_cl__note(ctx, "program cache disabled: cannot create %s: %s", dir, why);
        return;
    }
    err = probe_writable(dir);
    if (err) {
        describe_errno(err, why, sizeof why);
        fa_cl__note(ctx, "program cache disabled: %s is not writable: %s", dir, why);
        return;
    }
    if (untrusted_dir(dir, why, sizeof why)) {
        fa_cl__note(ctx, "program cache disabled: %s", why);
        return;
    }
    memcpy(ctx->cache_dir, dir, (size_t)n + 1);
    fa_cl__note(ctx, "program cache: %s", dir);
}

/* The whole of a cache entry, malloc'd, if it can be trusted (the rule at the top of this file).
 * Returns 0; ENOENT (no entry: the usual miss); another errno value; or -1 with *why set. */
static int read_entry(const char *path, unsigned char **out, size_t *size, const char **why)
{
    *out = NULL;
    /* O_NONBLOCK: a FIFO or a device in the cache is refused, not waited on */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? (*why = "a symbolic link, not followed", -1) : errno;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0)
        rc = errno;
    else if (!S_ISREG(st.st_mode))
        *why = "not a regular file", rc = -1;
    else if (st.st_uid != geteuid())
        *why = "not owned by this user: another user's binary is never run", rc = -1;
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        *why = "writable by group or others: its binary could be anyone's", rc = -1;
    else if ((unsigned long long)st.st_size > CACHE_MAX_FILE_BYTES)
        rc = EFBIG;
    unsigned char *buf = NULL;
    size_t got = 0;
    if (rc == 0 && !(buf = (unsigned char *)malloc(st.st_size > 0 ? (size_t)st.st_size : 1)))
        rc = ENOMEM;
    while (rc == 0 && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            rc = r < 0 ? errno : EIO;
        else
            got += (size_t)r;
    }
    close(fd);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *size = got;
    return 0;
}

static void count(fa_cl_context *ctx, unsigned *counter)
{
    fa_cl__lock_acquire(&ctx->lock);
    (*counter)++;
    fa_cl__lock_release(&ctx->lock);
}

static void rejected(fa_cl_context *ctx, const char *name, const char *why)
{
    count(ctx, &ctx->stats.cache_rejected);
    fa_cl__note(ctx, "program cache: ignored %s: %s; building from source", name, why);
}

/* The payload of the trusted entry of (texts, options) whose key fields all match ctx's device:
 * 0 with *file (malloc'd, the caller frees) and got->binary pointing into it; -1 on a miss or a
 * rejected entry (the notes say why). */
static int load_entry(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options,
                      unsigned char **file, fa_cl__cache_entry *got, char name[64])
{
    *file = NULL;
    if (!ctx->cache_dir[0])
        return -1;
    fa_cl__cache_entry want;
    char *source = NULL, path[1100], why_buf[256];
    if (make_key(ctx, texts, ntexts, options, &want, &source) != 0)
        return -1;
    fa_cl__cache_entry_name(&want, name);
    snprintf(path, sizeof path, "%s/%s", ctx->cache_dir, name);
    size_t size = 0;
    const char *why = NULL;
    int rc = -1, err = read_entry(path, file, &size, &why);
    if (err) {
        if (err > 0 && err != ENOENT)
            describe_errno(err, why_buf, sizeof why_buf), why = why_buf;
        if (err != ENOENT)
            rejected(ctx, name, why);
        goto done;
    }
    if (fa_cl__cache_entry_decode(*file, size, got, &why) != 0) {
        rejected(ctx, name, why);
        goto done;
    }
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        if (got->field_len[i] != want.field_len[i] || memcmp(got->field[i], want.field[i], want.field_len[i]) != 0) {
            snprintf(why_buf, sizeof why_buf, "written for another %s", field_names[i]);
            rejected(ctx, name, why_buf);
            goto done;
        }
    }
    rc = 0;
done:
    if (rc != 0) {
        free(*file);
        *file = NULL;
    }
    free(source);
    return rc;
}

cl_program fa_cl__binary_cache_load(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options)
{
    fa_cl__cache_entry got;
    unsigned char *file = NULL;
    char name[64], why_buf[256];
    if (load_entry(ctx, texts, ntexts, options, &file, &got, name) != 0)
        return NULL;
    cl_int status = CL_SUCCESS, cl_err = CL_SUCCESS;
    const unsigned char *bin = got.binary;
    size_t bin_len = got.binary_len;
    cl_program prog = clCreateProgramWithBinary(ctx->cl_ctx, 1, &ctx->device, &bin_len, &bin, &status, &cl_err);
    if (prog && cl_err == CL_SUCCESS && status == CL_SUCCESS)
        cl_err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    if (!prog || cl_err != CL_SUCCESS || status != CL_SUCCESS) {
        snprintf(why_buf, sizeof why_buf, "the driver refused the binary (%s)",
                 fa_cl__cl_error_name(cl_err != CL_SUCCESS ? cl_err : status));
        if (prog)
            clReleaseProgram(prog);
        prog = NULL;
        rejected(ctx, name, why_buf);
    } else
        count(ctx, &ctx->stats.loaded_from_disk);
    free(file);
    return prog;
}

int fa_cl__verdict_load(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *what, char *out,
                        size_t n)
{
    fa_cl__cache_entry got;
    unsigned char *file = NULL;
    char name[64];
    if (n == 0 || load_entry(ctx, texts, ntexts, what, &file, &got, name) != 0)
        return 0;
    const size_t len = got.binary_len < n - 1 ? got.binary_len : n - 1;
    memcpy(out, got.binary, len);
    out[len] = '\0';
    free(file);
    return 1;
}

/* prog's binary for ctx's device (a program may span several devices of the context). */
static unsigned char *program_binary(fa_cl_context *ctx, cl_program prog, size_t *size, cl_int *err)
{
    cl_uint ndev = 0;
    *err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL);
    if (*err != CL_SUCCESS || ndev == 0 || ndev > 64)
        return NULL;
    cl_device_id devs[64];
    size_t sizes[64] = {0};
    unsigned char *bins[64] = {0};
    *err = clGetProgramInfo(prog, CL_PROGRAM_DEVICES, ndev * sizeof devs[0], devs, NULL);
    if (*err == CL_SUCCESS)
        *err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, ndev * sizeof sizes[0], sizes, NULL);
    if (*err != CL_SUCCESS)
        return NULL;
    cl_uint mine = ndev;
    for (cl_uint i = 0; i < ndev; i++)
        if (devs[i] == ctx->device)
            mine = i;
    if (mine == ndev || sizes[mine] == 0)
        return NULL;
    /* entries left NULL are skipped by the implementation (OpenCL 1.2, CL_PROGRAM_BINARIES) */
    bins[mine] = (unsigned char *)malloc(sizes[mine]);
    if (!bins[mine])
        return NULL;
    *err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, ndev * sizeof bins[0], bins, NULL);
    if (*err != CL_SUCCESS) {
        free(bins[mine]);
        return NULL;
    }
    *size = sizes[mine];
    return bins[mine];
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Write (texts, options)'s entry holding payload: a temporary file in the cache directory renamed
 * over the entry. Returns 0, or -1 (the notes say why). */
static int store_entry(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options,
                       const unsigned char *payload, size_t payload_len)
{
    fa_cl__cache_entry e;
    char *source = NULL, name[64], path[1100], tmp[1100], why[256];
    if (make_key(ctx, texts, ntexts, options, &e, &source) != 0)
        return -1;
    fa_cl__cache_entry_name(&e, name);
    size_t file_len = 0;
    e.binary = payload;
    e.binary_len = payload_len;
    unsigned char *file = fa_cl__cache_entry_encode(&e, &file_len);
    int rc = -1;
    if (!file)
        goto done;
    snprintf(path, sizeof path, "%s/%s", ctx->cache_dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", ctx->cache_dir, name);
    int fd = mkstemp(tmp);
    int err = fd < 0 ? errno : fchmod(fd, 0600) != 0 ? errno : write_all(fd, file, file_len);
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err) {
        if (fd >= 0)
            unlink(tmp);
        describe_errno(err, why, sizeof why);
        fa_cl__note(ctx, "program cache: could not write %s: %s", path, why);
        goto done;
    }
    rc = 0;
done:
    free(file);
    free(source);
    return rc;
}

void fa_cl__binary_cache_store(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *options,
                               cl_program prog)
{
    if (!ctx->cache_dir[0])
        return;
    cl_int cl_err = CL_SUCCESS;
    size_t bin_len = 0;
    unsigned char *bin = program_binary(ctx, prog, &bin_len, &cl_err);
    if (!bin) {
        fa_cl__note(ctx, "program cache: the driver gave no program binary to store (%s)",
                    fa_cl__cl_error_name(cl_err));
        return;
    }
    if (store_entry(ctx, texts, ntexts, options, bin, bin_len) == 0)
        count(ctx, &ctx->stats.cache_stored);
    free(bin);
}

void fa_cl__verdict_store(fa_cl_context *ctx, const char *const *texts, int ntexts, const char *what,
                          const char *verdict)
{
    if (ctx->cache_dir[0])
        (void)store_entry(ctx, texts, ntexts, what, (const unsigned char *)verdict, strlen(verdict));
}

#endif
