/* SPDX-License-Identifier: Apache-2.0 */
/* fa_cl_info's --profile mode (fa_cl_info_profile.c): plans for a named profile, no device needed. */
#ifndef FA_CL_INFO_PROFILE_H
#define FA_CL_INFO_PROFILE_H

/* name: a profile, "all" or "list". With emit_dir, write <variant>.cl and builds.tsv there instead
 * of printing the plan table. Returns the exit status: 0, 1 (write failed), 2 (no such profile). */
int fa_cl_info_profile(const char *name, const char *emit_dir);

/* --emit DIR for profile `which` (a name or "all"): the builds of fa_cl_info_emit.c's cases in
 * DIR/builds.tsv (and the plans the library would refuse in DIR/unplanned.tsv), each family's source
 * in DIR/<family>.cl. Returns 0, or 1 when a file cannot be written or the case table is wrong. */
int fa_cl_info_emit(const char *which, const char *dir);

/* --features (and the default output): for each dtype, feature and mask type, the kernel families
 * that take it, and what device each family needs: the families' own registry data. */
void fa_cl_info_features(void);

/* --tune: every FA_CL_TUNE key (the planner's, then each family's) as docs/tuning.md lists it. */
void fa_cl_info_tune(void);

#endif /* FA_CL_INFO_PROFILE_H */
