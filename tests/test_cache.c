/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The on-disk program binary cache (src/binary_cache.c). Subsets:
 *   format     no device: encode/decode round trip; every truncation, appended byte and flipped byte
 *              is refused or changes the key; the file name changes with every key field
 *   warm       cold -> warm: a second context on the same (fresh) cache directory loads the program
 *              from disk instead of compiling, and computes the same correct result
 *   corrupt    a truncated, bit-flipped, garbage, empty or foreign file, and a well-formed file whose
 *              binary the driver refuses: ignored (noted), rebuilt from source, correct, file repaired
 *   unwritable a read-only directory, a directory that cannot be created (its parent is a file), a
 *              directory removed after context creation, FA_CL_CACHE_DIR=off: plans still work, no
 *              cache file, and the notes say why; the default directory follows XDG_CACHE_HOME / HOME
 *   concurrent processes storing the same entry at once leave one valid file and no temporary files
 *   trust      a forged entry (the genuine key, another kernel's binary writing 42) runs from the
 *              user's own private directory (the trust boundary) and is never loaded where someone
 *              else could have written it: a directory writable by others, a directory above it
 *              writable by others, a directory or file of another uid (as root), a group/other-
 *              writable file, a symlinked entry, a symlinked cache directory pointing somewhere
 *              unsafe (one pointing somewhere safe is used); a FIFO as the entry or as a .cl file of
 *              FA_CL_KERNEL_DIR returns at once; under umask 000 directories are made 0700, files 0600
 * Every subset works in its own temporary directory (FA_CL_CACHE_DIR is set here, never ~/.cache).
 */
#include "test_util.h"

#include "program/program.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static tu_tally tally = {"cache", 0, 0};

/* Small, causal, GQA, with LSE: one program, a fast build. */
static const tu_case base_case = {1, 4, 2, 37, 53, 32, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 1};

/* ---- helpers ---------------------------------------------------------------------------------- */

static char root[256]; /* this run's temporary directory */

static int make_root(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/fa_cl_test_cache.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        printf("mkdtemp(%s) failed: %s\n", root, strerror(errno));
        return -1;
    }
    return 0;
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        closedir(d);
        chmod(path, 0755);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Entries in dir: files ending in ".bin" (*first gets the first one's path), and temporary files. */
static int count_entries(const char *dir, char *first, size_t first_size, int *temporaries)
{
    int n = 0;
    if (temporaries)
        *temporaries = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' && len > 2 && temporaries)
            (*temporaries)++;
        else if (len > 4 && !strcmp(e->d_name + len - 4, ".bin")) {
            if (n++ == 0 && first)
                snprintf(first, first_size, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = (unsigned char *)malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static int write_file(const char *path, const unsigned char *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    return (fclose(f) == 0 && w == size) ? 0 : -1;
}

/* A context whose FA_CL_CACHE_DIR is dir (NULL: unset). Returns 0, TU_EXIT_SKIP or 1. */
static int context_on(const char *dir, fa_cl_context **ctx)
{
    if (dir)
        setenv("FA_CL_CACHE_DIR", dir, 1);
    else
        unsetenv("FA_CL_CACHE_DIR");
    return tu_context(ctx);
}

typedef struct outcome {
    int correct;
    fa_cl__program_stats stats; /* after the plan */
    char detail[700];
    char notes[FA_CL_NOTES_CAPACITY];
} outcome;

/* A fresh context on dir: plan + forward the base case, check it, and record where the program came from. */
static int run_once(const char *dir, outcome *out)
{
    memset(out, 0, sizeof *out);
    fa_cl_context *ctx = NULL;
    int rc = context_on(dir, &ctx);
    if (rc != 0)
        return rc;
    tu_problem p;
    if (tu_problem_init(&p, ctx, &base_case, 7, 1) != 0) {
        fa_cl_context_release(ctx);
        return 1;
    }
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &p.desc, &plan);
    if (st == FA_CL_SUCCESS)
        st = fa_cl_plan_forward(plan, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, NULL);
    fa_cl_plan_release(plan);
    if (st != FA_CL_SUCCESS) {
        snprintf(out->detail, sizeof out->detail, "%s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    } else {
        clFinish(fa_cl_context_queue(ctx));
        tu_problem_read(&p, ctx);
        tu_result r;
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, out->detail, sizeof out->detail);
        out->correct = r.ok;
    }
    out->stats = ctx->stats;
    snprintf(out->notes, sizeof out->notes, "%s", fa_cl_context_notes(ctx));
    tu_problem_free(&p);
    fa_cl_context_release(ctx);
    return 0;
}

static void print_notes(const outcome *o) { printf("  notes: %s", o->notes[0] ? o->notes : "(none)\n"); }

/* ---- format: no device ------------------------------------------------------------------------- */

static void sample_entry(fa_cl__cache_entry *e, const unsigned char *bin, size_t bin_len)
{
    static const char *const f[FA_CL_KEY_FIELDS] = {"__kernel void k(void) {}", "-cl-std=CL1.2 -DX=1", "dev",
                                                    "vendor", "OpenCL 1.2", "1.0", "platform", "OpenCL 3.0"};
    memset(e, 0, sizeof *e);
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        e->field[i] = f[i];
        e->field_len[i] = strlen(f[i]);
    }
    e->binary = bin;
    e->binary_len = bin_len;
}

static int same_key(const fa_cl__cache_entry *a, const fa_cl__cache_entry *b)
{
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++)
        if (a->field_len[i] != b->field_len[i] || memcmp(a->field[i], b->field[i], a->field_len[i]) != 0)
            return 0;
    return 1;
}

static int subset_format(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    unsigned char bin[300];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)(i * 37 + 11);
    fa_cl__cache_entry e, d;
    sample_entry(&e, bin, sizeof bin);
    size_t size = 0;
    unsigned char *file = fa_cl__cache_entry_encode(&e, &size);
    const char *why = "";
    int ok = file && fa_cl__cache_entry_decode(file, size, &d, &why) == 0 && same_key(&e, &d) &&
             d.binary_len == sizeof bin && memcmp(d.binary, bin, sizeof bin) == 0;
    tu_expect(&tally, ok, "encode -> decode round trip (%zu bytes)", size);
    if (!file)
        return 1;

    int accepted = 0;
    for (size_t n = 0; n < size; n++)
        accepted += fa_cl__cache_entry_decode(file, n, &d, &why) == 0;
    tu_expect(&tally, accepted == 0, "all %zu truncations refused (%d accepted)", size, accepted);

    unsigned char *longer = (unsigned char *)malloc(size + 1);
    memcpy(longer, file, size);
    longer[size] = 0;
    tu_expect(&tally, fa_cl__cache_entry_decode(longer, size + 1, &d, &why) != 0,
              "a byte appended is refused (%s)", why);
    free(longer);

    /* a flipped bit anywhere: refused, or (inside a key field) a different key, never the same entry */
    int trusted = 0;
    for (size_t i = 0; i < size; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            file[i] ^= (unsigned char)(1u << bit);
            if (fa_cl__cache_entry_decode(file, size, &d, &why) == 0 && same_key(&e, &d))
                trusted++;
            file[i] ^= (unsigned char)(1u << bit);
        }
    }
    tu_expect(&tally, trusted == 0, "every flipped bit (2 per byte, %zu bytes) is refused or changes the key", size);
    free(file);

    /* the name depends on every field and on where fields end */
    char base[64], other[64];
    fa_cl__cache_entry_name(&e, base);
    int distinct = 1;
    for (int i = 0; i < FA_CL_KEY_FIELDS; i++) {
        fa_cl__cache_entry x = e;
        x.field_len[i] = e.field_len[i] - 1; /* drop the last character of one field */
        fa_cl__cache_entry_name(&x, other);
        distinct &= strcmp(base, other) != 0;
    }
    fa_cl__cache_entry ab = e, ab2 = e;
    ab.field[2] = "ab", ab.field_len[2] = 2, ab.field[3] = "c", ab.field_len[3] = 1;
    ab2.field[2] = "a", ab2.field_len[2] = 1, ab2.field[3] = "bc", ab2.field_len[3] = 2;
    fa_cl__cache_entry_name(&ab, base);
    fa_cl__cache_entry_name(&ab2, other);
    distinct &= strcmp(base, other) != 0;
    tu_expect(&tally, distinct && strlen(base) == 36, "file names differ for every key field and field boundary (%s)",
              base);
    return 0;
}

/* ---- warm: cold -> warm --------------------------------------------------------------------------- */

static int subset_warm(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/cache", root);
    outcome cold, warm;
    int rc = run_once(dir, &cold);
    if (rc != 0)
        return rc;
    print_notes(&cold);
    char want[600];
    snprintf(want, sizeof want, "program cache: %s\n", dir);
    tu_expect(&tally, strstr(cold.notes, want) != NULL, "notes name the cache directory (\"%.*s\")",
              (int)strlen(want) - 1, want);
    int files = count_entries(dir, NULL, 0, NULL);
    tu_expect(&tally, cold.correct && cold.stats.built_from_source == 1 && cold.stats.loaded_from_disk == 0 &&
                          cold.stats.cache_stored == 1 && files == 1,
              "cold: compiled from source and stored (built %u, loaded %u, stored %u, %d file): %s",
              cold.stats.built_from_source, cold.stats.loaded_from_disk, cold.stats.cache_stored, files, cold.detail);
    rc = run_once(dir, &warm);
    if (rc != 0)
        return rc;
    tu_expect(&tally, warm.correct && warm.stats.built_from_source == 0 && warm.stats.loaded_from_disk == 1 &&
                          warm.stats.cache_rejected == 0 && warm.stats.cache_stored == 0,
              "warm: a second context loads the program from disk (built %u, loaded %u, rejected %u) and is "
              "correct: %s",
              warm.stats.built_from_source, warm.stats.loaded_from_disk, warm.stats.cache_rejected, warm.detail);

    /* another build option (here FA_CL_BUILD_OPTIONS) is another entry, not a hit */
    setenv("FA_CL_BUILD_OPTIONS", "-DFA_CL_TEST_CACHE_KEY=1", 1);
    outcome other;
    rc = run_once(dir, &other);
    unsetenv("FA_CL_BUILD_OPTIONS");
    if (rc != 0)
        return rc;
    files = count_entries(dir, NULL, 0, NULL);
    tu_expect(&tally, other.correct && other.stats.built_from_source == 1 && other.stats.loaded_from_disk == 0 &&
                          files == 2,
              "other build options: compiled, stored as a second entry (%d files)", files);
    return 0;
}

/* ---- corrupt: every bad file is ignored, rebuilt and repaired --------------------------------------- */

typedef enum damage {
    TRUNCATE_HALF,
    TRUNCATE_LAST_BYTE,
    EMPTY,
    FLIP_BINARY_BYTE,
    FLIP_MAGIC,
    GARBAGE,
    APPEND,
    FOREIGN_DRIVER,
    REFUSED_BINARY,
    N_DAMAGE
} damage;

static const char *const damage_names[N_DAMAGE] = {
    "truncated to half",        "last byte cut",          "empty file",
    "a byte of the binary flipped", "magic overwritten",  "random garbage of the same size",
    "a byte appended",          "written for another driver version (checksum valid)",
    "well-formed, but a binary the driver refuses"};

/* Damage the valid file at path in place. Returns 0, or -1 if the file could not be rewritten. */
static int apply_damage(const char *path, damage how)
{
    size_t size = 0;
    unsigned char *data = read_file(path, &size);
    if (!data)
        return -1;
    fa_cl__cache_entry e;
    const char *why = "";
    int rc = -1;
    switch (how) {
    case TRUNCATE_HALF: rc = write_file(path, data, size / 2); break;
    case TRUNCATE_LAST_BYTE: rc = write_file(path, data, size - 1); break;
    case EMPTY: rc = write_file(path, data, 0); break;
    case FLIP_BINARY_BYTE:
        if (fa_cl__cache_entry_decode(data, size, &e, &why) != 0 || e.binary_len == 0)
            break;
        data[(size_t)(e.binary - data) + e.binary_len / 2] ^= 0x5a;
        rc = write_file(path, data, size);
        break;
    case FLIP_MAGIC: data[0] = 'X'; rc = write_file(path, data, size); break;
    case GARBAGE: {
        tu_rng r;
        tu_rng_seed(&r, 99);
        for (size_t i = 0; i < size; i++)
            data[i] = (unsigned char)tu_rng_next(&r);
        rc = write_file(path, data, size);
        break;
    }
    case APPEND: {
        unsigned char *more = (unsigned char *)realloc(data, size + 1);
        if (!more)
            break;
        data = more;
        data[size] = 0;
        rc = write_file(path, data, size + 1);
        break;
    }
    case FOREIGN_DRIVER:
    case REFUSED_BINARY: {
        if (fa_cl__cache_entry_decode(data, size, &e, &why) != 0)
            break;
        unsigned char junk[4096];
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (unsigned char)(i * 131 + 7);
        if (how == FOREIGN_DRIVER) {
            e.field[FA_CL_KEY_DRIVER_VERSION] = "0.0-some-other-driver";
            e.field_len[FA_CL_KEY_DRIVER_VERSION] = strlen(e.field[FA_CL_KEY_DRIVER_VERSION]);
        } else {
            e.binary = junk;
            e.binary_len = sizeof junk;
        }
        size_t n = 0;
        unsigned char *re = fa_cl__cache_entry_encode(&e, &n); /* points into data: encode before freeing */
        rc = re ? write_file(path, re, n) : -1;
        free(re);
        break;
    }
    case N_DAMAGE: break;
    }
    free(data);
    return rc;
}

static int subset_corrupt(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/cache", root);
    outcome o;
    int rc = run_once(dir, &o);
    if (rc != 0)
        return rc;
    if (!tu_expect(&tally, o.correct && count_entries(dir, path, sizeof path, NULL) == 1,
                   "a valid entry to damage: %s", o.detail))
        return 0;
    for (int how = 0; how < N_DAMAGE; how++) {
        if (apply_damage(path, (damage)how) != 0) {
            tu_expect(&tally, 0, "%s: could not damage %s", damage_names[how], path);
            continue;
        }
        rc = run_once(dir, &o);
        if (rc != 0)
            return rc;
        const char *line = strstr(o.notes, "ignored");
        const char *eol = line ? strchr(line, '\n') : NULL;
        tu_expect(&tally, o.correct && o.stats.cache_rejected == 1 && o.stats.loaded_from_disk == 0 &&
                              o.stats.built_from_source == 1 && line != NULL,
                  "%s: ignored, rebuilt from source, correct (rejected %u, loaded %u, built %u; note \"%.*s\"): %s",
                  damage_names[how], o.stats.cache_rejected, o.stats.loaded_from_disk, o.stats.built_from_source,
                  line ? (int)(eol ? eol - line : (long)strlen(line)) : 0, line ? line : "", o.detail);
        /* the rebuild replaced the bad file: the next context loads it */
        rc = run_once(dir, &o);
        if (rc != 0)
            return rc;
        tu_expect(&tally, o.correct && o.stats.loaded_from_disk == 1 && o.stats.cache_rejected == 0,
                  "%s: the file was repaired (next context loads it: loaded %u)", damage_names[how],
                  o.stats.loaded_from_disk);
    }
    int temporaries = 0;
    count_entries(dir, NULL, 0, &temporaries);
    tu_expect(&tally, temporaries == 0, "no temporary files left (%d)", temporaries);
    return 0;
}

/* ---- unwritable: no cache, still correct, and the notes say why ---------------------------------- */

static void expect_uncached(const char *what, const char *dir, const outcome *o, const char *note)
{
    print_notes(o);
    int files = dir ? count_entries(dir, NULL, 0, NULL) : 0;
    tu_expect(&tally, o->correct && o->stats.cache_stored == 0 && o->stats.loaded_from_disk == 0 && files == 0 &&
                          strstr(o->notes, note) != NULL,
              "%s: works without the cache (built %u, stored %u, %d files) and the notes say \"%s\": %s", what,
              o->stats.built_from_source, o->stats.cache_stored, files, note, o->detail);
}

/* A chmod 0555 directory. Root may write there anyway (the probe finds that out), so as root the
 * check also runs in a child process that first drops to an unprivileged user. The child is forked
 * before this process touches OpenCL: a fork after a driver started its threads may deadlock. */
static int readonly_dir(void)
{
    outcome o;
    int rc;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/readonly", root);
    mkdir(dir, 0755);
    chmod(dir, 0555);
    if (geteuid() == 0) {
        chmod(root, 0755); /* let the unprivileged child reach the directory */
        fflush(stdout);
        pid_t kid = fork();
        if (kid == 0) {
            /* nobody:nogroup, with its own PoCL cache since it cannot write root's */
            char pocl[600];
            snprintf(pocl, sizeof pocl, "%s/pocl-nobody", root);
            mkdir(pocl, 0777);
            chmod(pocl, 0777);
            setenv("POCL_CACHE_DIR", pocl, 1);
            if (setgid(65534) != 0 || setuid(65534) != 0) {
                printf("  (cannot drop to uid 65534: %s; the unprivileged check is skipped)\n", strerror(errno));
                fflush(stdout);
                _exit(3);
            }
            rc = run_once(dir, &o);
            fflush(stdout); /* _exit does not: the reason of a failure or skip would be lost */
            if (rc != 0)
                _exit(rc);
            expect_uncached("chmod 0555 directory, unprivileged user", dir, &o, "is not writable: Permission denied");
            fflush(stdout);
            _exit(tally.failed ? 1 : 0);
        }
        int status = 0;
        if (kid <= 0 || waitpid(kid, &status, 0) != kid)
            tu_expect(&tally, 0, "unprivileged child process: fork or wait failed: %s", strerror(errno));
        else if (!WIFEXITED(status))
            tu_expect(&tally, 0, "unprivileged child process: killed by signal %d", WTERMSIG(status));
        else if (WEXITSTATUS(status) == 77) /* e.g. GPU device nodes open only to a group nobody is not in */
            printf("  (the unprivileged user finds no OpenCL device; its check is skipped)\n");
        else if (WEXITSTATUS(status) != 3)
            tu_expect(&tally, WEXITSTATUS(status) == 0, "unprivileged child process: exit %d (0 expected)",
                      WEXITSTATUS(status));
        if ((rc = run_once(dir, &o)) != 0)
            return rc;
        print_notes(&o);
        tu_expect(&tally, o.correct, "chmod 0555 directory as root (root may write: %s): correct: %s",
                  o.stats.cache_stored ? "cached" : "not cached", o.detail);
    } else {
        if ((rc = run_once(dir, &o)) != 0)
            return rc;
        expect_uncached("chmod 0555 directory", dir, &o, "is not writable: Permission denied");
    }
    chmod(dir, 0755);
    return 0;
}

static int subset_unwritable(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    outcome o;
    int rc;
    char dir[512], file[512], sub[600];

    if ((rc = readonly_dir()) != 0)
        return rc;

    /* a directory whose parent is a regular file can never be created, not even by root */
    snprintf(file, sizeof file, "%s/plain_file", root);
    write_file(file, (const unsigned char *)"x", 1);
    snprintf(sub, sizeof sub, "%s/cache", file);
    if ((rc = run_once(sub, &o)) != 0)
        return rc;
    expect_uncached("parent is a regular file", NULL, &o, "program cache disabled: cannot create");
    tu_expect(&tally, strstr(o.notes, "ENOTDIR") != NULL, "the note names the error (ENOTDIR)");

    /* the directory disappears after the context was created: the store fails, the plan does not */
    snprintf(dir, sizeof dir, "%s/vanishing", root);
    fa_cl_context *ctx = NULL;
    if ((rc = context_on(dir, &ctx)) != 0)
        return rc;
    remove_tree(dir);
    tu_problem p;
    if (tu_problem_init(&p, ctx, &base_case, 7, 1) != 0)
        return 1;
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &p.desc, &plan);
    fa_cl_plan_release(plan);
    printf("  notes: %s", fa_cl_context_notes(ctx));
    tu_expect(&tally, st == FA_CL_SUCCESS && ctx->stats.cache_stored == 0 &&
                          strstr(fa_cl_context_notes(ctx), "could not write") != NULL,
              "cache directory removed after context creation: plan %s, the note says it could not write",
              fa_cl_status_string(st));
    tu_problem_free(&p);
    fa_cl_context_release(ctx);

    /* switched off */
    if ((rc = run_once("off", &o)) != 0)
        return rc;
    expect_uncached("FA_CL_CACHE_DIR=off", NULL, &o, "program cache disabled: FA_CL_CACHE_DIR=off");

    /* the default directory: $XDG_CACHE_HOME/fa_cl, else $HOME/.cache/fa_cl (pointed at the temp dir) */
    char xdg[600], home[600], want[700];
    snprintf(xdg, sizeof xdg, "%s/xdg", root);
    snprintf(home, sizeof home, "%s/home", root);
    const char *saved_home = getenv("HOME");
    char saved[1024] = "";
    if (saved_home)
        snprintf(saved, sizeof saved, "%s", saved_home);
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    if ((rc = context_on(NULL, &ctx)) != 0)
        return rc;
    snprintf(want, sizeof want, "program cache: %s/fa_cl\n", xdg);
    tu_expect(&tally, strstr(fa_cl_context_notes(ctx), want) != NULL, "FA_CL_CACHE_DIR unset: %s/fa_cl (notes: %.*s)",
              xdg, (int)strcspn(fa_cl_context_notes(ctx), "\n"), fa_cl_context_notes(ctx));
    fa_cl_context_release(ctx);
    unsetenv("XDG_CACHE_HOME");
    if ((rc = context_on(NULL, &ctx)) != 0)
        return rc;
    snprintf(want, sizeof want, "program cache: %s/.cache/fa_cl\n", home);
    tu_expect(&tally, strstr(fa_cl_context_notes(ctx), want) != NULL,
              "FA_CL_CACHE_DIR and XDG_CACHE_HOME unset: %s/.cache/fa_cl (notes: %.*s)", home,
              (int)strcspn(fa_cl_context_notes(ctx), "\n"), fa_cl_context_notes(ctx));
    fa_cl_context_release(ctx);
    if (saved_home)
        setenv("HOME", saved, 1);
    return 0;
}

/* ---- trust: only files nobody else could have written are loaded --------------------------------- */

/* The base case's o has this many elements (contiguous [B, Hq, Sq, D]). */
#define BASE_O_ELEMS ((size_t)(1 * 4 * 37 * 32))

/* A program binary of another kernel with fa_forward's signature, built for ctx's device: it writes
 * 42 into every element of the base case's o. NULL on failure (printed). */
static unsigned char *foreign_binary(fa_cl_context *ctx, size_t *len)
{
    const char *texts[3] = {fa_cl__embedded_text("fa_common.cl"), fa_cl__embedded_text("fa_forward_common.cl"),
                            "__kernel void fa_forward(FA_FORWARD_PARAMS) {\n"
                            "    for (ulong i = get_global_id(0); i < N_ELEMS; i += get_global_size(0))\n"
                            "        o[o_off + i] = 42.0f;\n"
                            "}\n"};
    char options[200];
    snprintf(options, sizeof options, "-DFA_DTYPE=0 -DHEAD_DIM=32 -DD_PAD=32 -DBLOCK_Q=8 -DBLOCK_KV=8 -DN_ELEMS=%zu",
             BASE_O_ELEMS);
    cl_int err = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(ctx->cl_ctx, 3, texts, NULL, &err);
    if (prog)
        err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    unsigned char *bin = NULL;
    if (prog && err == CL_SUCCESS && clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof *len, len, NULL) == 0 &&
        *len > 0 && (bin = (unsigned char *)malloc(*len)) != NULL &&
        clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        free(bin);
        bin = NULL;
    }
    if (!bin)
        printf("  could not build the foreign kernel (%s)\n", fa_cl__cl_error_name(err));
    if (prog)
        clReleaseProgram(prog);
    return bin;
}

/* Replace the binary of the entry at path (genuine key kept) by bin, mode 0600. 0 on success. */
static int forge(const char *path, const unsigned char *bin, size_t len)
{
    size_t size = 0;
    unsigned char *data = read_file(path, &size);
    fa_cl__cache_entry e;
    const char *why = "";
    int rc = -1;
    if (data && fa_cl__cache_entry_decode(data, size, &e, &why) == 0) {
        e.binary = bin;
        e.binary_len = len;
        size_t n = 0;
        unsigned char *re = fa_cl__cache_entry_encode(&e, &n);
        unlink(path);
        rc = re && write_file(path, re, n) == 0 && chmod(path, 0600) == 0 ? 0 : -1;
        free(re);
    }
    free(data);
    return rc;
}

/* One run on dir with a forged entry at path: never loaded, correct, and a note containing note. */
static void expect_refused(const char *what, const char *dir, const char *note)
{
    outcome o;
    if (run_once(dir, &o) != 0)
        return;
    print_notes(&o);
    tu_expect(&tally, o.correct && o.stats.loaded_from_disk == 0 && strstr(o.notes, note) != NULL,
              "%s: the forged entry is not loaded (loaded %u, built %u), correct, notes say \"%s\": %s", what,
              o.stats.loaded_from_disk, o.stats.built_from_source, note, o.detail);
}

static int subset_trust(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    char dir[512], path[1024], link[1100], open_dir[600], sub[700];
    snprintf(dir, sizeof dir, "%s/trusted", root);
    outcome o;
    int rc = run_once(dir, &o);
    if (rc != 0)
        return rc;
    if (!tu_expect(&tally, o.correct && count_entries(dir, path, sizeof path, NULL) == 1, "a genuine entry: %s",
                   o.detail))
        return 0;
    fa_cl_context *ctx = NULL;
    if ((rc = context_on("off", &ctx)) != 0)
        return rc;
    size_t len = 0;
    unsigned char *bin = foreign_binary(ctx, &len);
    fa_cl_context_release(ctx);
    if (!bin)
        return 1;

    /* the boundary: in the user's own private directory a file with the genuine key is trusted */
    struct stat st;
    stat(dir, &st);
    tu_expect(&tally, forge(path, bin, len) == 0 && (st.st_mode & 0777) == 0700,
              "forged entry written (the library made the directory %03o)", (unsigned)(st.st_mode & 0777));
    if ((rc = run_once(dir, &o)) != 0)
        return rc;
    tu_expect(&tally, o.stats.loaded_from_disk == 1 && !o.correct,
              "control: from the user's own 0700 directory the forged binary is loaded and runs (o = 42): loaded "
              "%u, %s", o.stats.loaded_from_disk, o.correct ? "correct" : "wrong, as forged");

    chmod(dir, 0777);
    expect_refused("cache directory writable by others (0777)", dir, "writable by group or others");
    chmod(dir, 0700);

    forge(path, bin, len);
    chmod(path, 0666);
    expect_refused("entry writable by others (0666)", dir, "writable by group or others");

    forge(path, bin, len);
    snprintf(link, sizeof link, "%s.link", path);
    rename(path, link);
    if (symlink(link, path) != 0)
        printf("  symlink: %s\n", strerror(errno));
    expect_refused("entry is a symbolic link", dir, "a symbolic link, not followed");
    unlink(path);

    /* a directory above the cache writable by others (not sticky): the cache could be swapped */
    snprintf(open_dir, sizeof open_dir, "%s/open", root);
    snprintf(sub, sizeof sub, "%s/cache", open_dir);
    mkdir(open_dir, 0777);
    chmod(open_dir, 0777);
    expect_refused("a directory above the cache writable by others", sub, "above the cache directory");

    /* a symlinked cache directory: its target decides */
    snprintf(link, sizeof link, "%s/link_to_trusted", root);
    if (symlink(dir, link) == 0 && (rc = run_once(link, &o)) == 0) /* rebuilds, then stores the genuine entry */
        tu_expect(&tally, o.correct && o.stats.cache_stored == 1 && strstr(o.notes, "disabled") == NULL,
                  "cache directory a symlink to a private directory: used (stored %u)", o.stats.cache_stored);
    snprintf(link, sizeof link, "%s/link_to_open", root);
    if (symlink(open_dir, link) == 0) {
        forge(path, bin, len);
        expect_refused("cache directory a symlink to a directory writable by others", link,
                       "writable by group or others");
    }

    if (geteuid() == 0) {
        /* another uid's directory and file (65534: nobody) */
        forge(path, bin, len);
        if (chown(dir, 65534, 65534) == 0) {
            expect_refused("cache directory owned by uid 65534", dir, "not owned by this user");
            chown(dir, 0, 0);
        }
        forge(path, bin, len);
        if (chown(path, 65534, 65534) == 0)
            expect_refused("entry owned by uid 65534", dir, "not owned by this user");
    } else {
        printf("  (not root: the other-uid cases need chown and are not run)\n");
    }

    /* a FIFO as the entry: refused at once, never waited on */
    unlink(path);
    mkfifo(path, 0600);
    double t0 = tu_now_ms();
    if ((rc = run_once(dir, &o)) != 0)
        return rc;
    double ms = tu_now_ms() - t0;
    print_notes(&o);
    tu_expect(&tally, o.correct && o.stats.loaded_from_disk == 0 && strstr(o.notes, "not a regular file") != NULL &&
                          ms < 1000.0 + 1000.0 * o.stats.built_from_source,
              "entry is a FIFO: refused without blocking, built instead (%.0f ms, %u builds)", ms,
              o.stats.built_from_source);

    /* umask 000: the library's directories 0700, its files 0600 */
    mode_t old = umask(0);
    char a[700], b[800];
    snprintf(a, sizeof a, "%s/umask", root);
    snprintf(b, sizeof b, "%s/cache", a);
    rc = run_once(b, &o);
    umask(old);
    if (rc != 0)
        return rc;
    struct stat sa, sb, sf;
    char entry[1024] = "";
    count_entries(b, entry, sizeof entry, NULL);
    int ok = stat(a, &sa) == 0 && stat(b, &sb) == 0 && stat(entry, &sf) == 0;
    tu_expect(&tally, ok && (sa.st_mode & 0777) == 0700 && (sb.st_mode & 0777) == 0700 && (sf.st_mode & 0777) == 0600,
              "umask 000: directories %03o and %03o, entry %03o (0700, 0700, 0600 wanted)",
              ok ? (unsigned)(sa.st_mode & 0777) : 0, ok ? (unsigned)(sb.st_mode & 0777) : 0,
              ok ? (unsigned)(sf.st_mode & 0777) : 0);

    /* a FIFO among FA_CL_KERNEL_DIR's sources: a message naming it, at once */
    char kdir[600], kpath[800];
    snprintf(kdir, sizeof kdir, "%s/kernels", root);
    mkdir(kdir, 0700);
    static const char *const sources[] = {"fa_common.cl", "fa_forward_common.cl", "fa_forward.cl",
                                          "fa_forward_tiled.cl", "fa_nv_ptx.cl", "fa_nv_fwd_mainloop_sm80.cl",
                                          "fa_forward_nv_tf32.cl"};
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
        snprintf(kpath, sizeof kpath, "%s/%s", kdir, sources[i]);
        const char *text = fa_cl__embedded_text(sources[i]);
        if (text)
            write_file(kpath, (const unsigned char *)text, strlen(text));
    }
    snprintf(kpath, sizeof kpath, "%s/fa_common.cl", kdir);
    unlink(kpath);
    mkfifo(kpath, 0600);
    setenv("FA_CL_KERNEL_DIR", kdir, 1);
    if ((rc = context_on("off", &ctx)) != 0)
        return rc;
    tu_problem p;
    if (tu_problem_init(&p, ctx, &base_case, 7, 0) == 0) {
        fa_cl_plan *plan = NULL;
        t0 = tu_now_ms();
        fa_cl_status status = fa_cl_plan_create(ctx, &p.desc, &plan);
        ms = tu_now_ms() - t0;
        fa_cl_plan_release(plan);
        tu_expect(&tally, status == FA_CL_ERROR_BUILD_FAILED && strstr(fa_cl_last_error(ctx), kpath) &&
                              strstr(fa_cl_last_error(ctx), "not a regular file") && ms < 1000.0,
                  "FA_CL_KERNEL_DIR with a FIFO fa_common.cl: %s in %.0f ms: %s", fa_cl_status_string(status), ms,
                  fa_cl_last_error(ctx));
        tu_problem_free(&p);
    }
    fa_cl_context_release(ctx);
    unsetenv("FA_CL_KERNEL_DIR");
    free(bin);
    return 0;
}

/* ---- concurrent: processes storing the same entry ---------------------------------------------- */

#define WRITERS 3

static int subset_concurrent(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/shared", root);
    /* fork before this process touches OpenCL: each child has its own driver state */
    pid_t kids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            outcome o;
            int rc = run_once(dir, &o);
            printf("  process %d: built %u, stored %u, loaded %u, correct %d\n", i, o.stats.built_from_source,
                   o.stats.cache_stored, o.stats.loaded_from_disk, o.correct);
            fflush(stdout);
            _exit(rc == 0 ? (o.correct ? 0 : 1) : rc);
        }
    }
    int all_ok = 1, skipped = 0;
    for (int i = 0; i < WRITERS; i++) {
        int status = 0;
        if (kids[i] < 0 || waitpid(kids[i], &status, 0) < 0 || !WIFEXITED(status)) {
            all_ok = 0;
            continue;
        }
        skipped |= WEXITSTATUS(status) == TU_EXIT_SKIP;
        all_ok &= WEXITSTATUS(status) == 0;
    }
    if (skipped)
        return TU_EXIT_SKIP;
    int temporaries = 0, files = count_entries(dir, path, sizeof path, &temporaries);
    tu_expect(&tally, all_ok && files == 1 && temporaries == 0,
              "%d processes planning at once on an empty cache: all correct, %d entry, %d temporary files",
              WRITERS, files, temporaries);
    size_t size = 0;
    unsigned char *data = read_file(path, &size);
    fa_cl__cache_entry e;
    const char *why = "";
    tu_expect(&tally, data && fa_cl__cache_entry_decode(data, size, &e, &why) == 0, "the entry is well formed (%s)",
              data ? "decoded" : "unreadable");
    free(data);
    outcome o;
    int rc = run_once(dir, &o);
    if (rc != 0)
        return rc;
    tu_expect(&tally, o.correct && o.stats.loaded_from_disk == 1, "and a later process loads it: %s", o.detail);
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {
        {"format", subset_format},         {"warm", subset_warm},             {"corrupt", subset_corrupt},
        {"unwritable", subset_unwritable}, {"concurrent", subset_concurrent}, {"trust", subset_trust},
    };
    /* every subset but format (no device, no files) works in a temporary directory of its own */
    const int in_root = argc > 1 && strcmp(argv[1], "format") != 0;
    if (in_root && make_root() != 0)
        return 1;
    int rc = tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), NULL, 0);
    if (in_root)
        remove_tree(root);
    return rc;
}
