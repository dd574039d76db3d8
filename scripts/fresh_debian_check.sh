#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's two commands on a pristine Debian 12, as a new user runs them: a minimal root from
# debootstrap (the mirror of this machine's own apt sources), this repository's HEAD cloned into it,
# then `bash scripts/setup.sh demo` and `bash scripts/setup.sh test` as root inside chroot. Prints both
# summaries (the demo's result, ctest's, which offline and valgrind tests ran) and the wall times.
# Run it before resolving an issue. Root only; about 15-25 minutes on 2 cores.
#
#   scripts/fresh_debian_check.sh [--root DIR] [--keep] [--env NAME=VALUE]... [--ci]
#
#   --root DIR   where to build the root (new or empty; default a new /var/tmp/fa_cl_fresh.XXXXXX)
#   --keep       keep the root afterwards (it is always unmounted)
#   --env N=V    set N=V for both commands inside (e.g. CI=true); repeatable
#   --ci         run `bash .ci/run` instead of `bash scripts/setup.sh test` (adds the sanitizer build)
#
# The logs stay in DIR.logs. Exit: 0 both commands passed; 1 one failed; 2 usage or setup.
# Only the committed HEAD is cloned: uncommitted changes are not tested.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse HEAD)

root=""
keep=0
ci=0
extra_env=()
while [ $# -gt 0 ]; do
    case "$1" in
    --root) root=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --env)
        [[ $2 == [A-Za-z_]*=* ]] || { echo "fresh_debian_check.sh: --env wants NAME=VALUE, not '$2'" >&2; exit 2; }
        extra_env+=("$2"); shift 2 ;;
    --ci) ci=1; shift ;;
    -h|--help) sed -n '3,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh_debian_check.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" != 0 ]; then
    echo "fresh_debian_check.sh: needs root (debootstrap, mount, chroot)" >&2
    exit 2
fi

# ---- the root and its cleanup -------------------------------------------------------------------

if [ -z "$root" ]; then
    root=$(mktemp -d /var/tmp/fa_cl_fresh.XXXXXX)
else
    mkdir -p "$root"
    if [ -n "$(ls -A "$root")" ]; then
        echo "fresh_debian_check.sh: --root $root is not empty" >&2
        exit 2
    fi
fi
root=$(realpath "$root")
# it becomes the chroot's /: mktemp made it 0700, which no other user could traverse (a real / is 0755)
chmod 0755 "$root"
# the mount checks compare paths as /proc/self/mountinfo writes them (whitespace escaped)
if [[ $root == / || $root =~ [[:space:]\\] ]]; then
    echo "fresh_debian_check.sh: unusable root '$root'" >&2
    exit 2
fi
logs="$root.logs"
mkdir -p "$logs"

# mount points at or under the root, deepest last (as mounted)
mounts_under_root() {
    awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo
}

# processes running inside the root: ours (it is this run's), found by their root directory
kill_inside() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill "-$1" "${p#/proc/}" 2>/dev/null
    done
}

# The step in progress (debootstrap, a command inside) runs in its own process group, in the
# background: a trapped signal interrupts `wait` at once instead of after the step.
job=""
run_job() { # run_job LOG COMMAND...
    local log=$1 rc=0
    shift
    set -m
    "$@" >"$log" 2>&1 &
    job=$!
    set +m
    wait "$job" || rc=$?
    job=""
    return $rc
}

cleanup() {
    local rc=$? mp
    set +e
    trap - EXIT INT TERM
    if [ -n "$job" ]; then # interrupted
        kill -TERM -- "-$job" 2>/dev/null
        kill_inside TERM
        sleep 2
        kill -KILL -- "-$job" 2>/dev/null
        kill_inside KILL
        sleep 1
    fi
    # unmount in reverse order; lazily where something still holds a mount (it is detached at once)
    for mp in $(mounts_under_root | tac); do
        umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || echo "fresh_debian_check.sh: cannot unmount $mp" >&2
    done
    if [ $keep = 1 ]; then
        echo "fresh_debian_check.sh: root kept: $root"
    elif [ -n "$(mounts_under_root)" ]; then
        # a /dev bind-mounted into a tree being deleted would take the host's device nodes with it
        echo "fresh_debian_check.sh: NOT deleting $root: still mounted inside it:" >&2
        mounts_under_root >&2
        rc=2
    else
        rm -rf --one-file-system "$root"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- debootstrap --------------------------------------------------------------------------------

# "URI SUITE COMPONENTS" for each enabled deb entry of this machine's apt sources (one-line and deb822)
host_sources() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk '$1 == "deb" {
            i = 2
            if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
            comps = ""; for (j = i + 2; j <= NF; j++) comps = comps " " $j
            print $i, $(i + 1), substr(comps, 2)
        }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk 'BEGIN { RS = "" } {
            types = uris = suites = comps = ""; enabled = "yes"
            n = split($0, line, "\n")
            for (k = 1; k <= n; k++) {
                if (line[k] ~ /^#/) continue
                key = tolower(line[k]); sub(/:.*/, "", key)
                val = line[k]; sub(/^[^:]*:[ \t]*/, "", val)
                if (key == "types") types = val; else if (key == "uris") uris = val
                else if (key == "suites") suites = val; else if (key == "components") comps = val
                else if (key == "enabled") enabled = tolower(val)
            }
            if (enabled == "no" || (" " types " ") !~ / deb /) next
            nu = split(uris, u, /[ \t]+/); ns = split(suites, s, /[ \t]+/)
            for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++) print u[a], s[b], comps
        }' "$f"
    done
}

sources=$(host_sources | awk '$2 ~ /^bookworm(-updates|-security)?$/')
mirror=$(awk '$2 == "bookworm" { print $1; exit }' <<<"$sources")
if [ -z "$mirror" ]; then
    echo "fresh_debian_check.sh: no bookworm entry in this machine's apt sources; using deb.debian.org"
    mirror=http://deb.debian.org/debian
    sources="$mirror bookworm main"
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    echo "fresh_debian_check.sh: installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

echo "fresh_debian_check.sh: commit $(git -C "$repo" log -1 --format='%h %s' "$commit" | cut -c1-100)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    echo "fresh_debian_check.sh: note: uncommitted changes in $repo are not part of this check"
fi
echo "fresh_debian_check.sh: root $root, mirror $mirror, logs $logs"
t0=$(date +%s)
if ! run_job "$logs/debootstrap.log" debootstrap --variant=minbase bookworm "$root" "$mirror"; then
    tail -20 "$logs/debootstrap.log"
    echo "fresh_debian_check.sh: debootstrap failed (log: $logs/debootstrap.log)" >&2
    exit 2
fi
# a fresh install's suites (updates and security too), as this machine has them
awk '{ print "deb", $1, $2, $3 }' <<<"$sources" >"$root/etc/apt/sources.list"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
t_root=$(($(date +%s) - t0))
echo "fresh_debian_check.sh: debootstrap: ${t_root} s"

for d in proc sys dev; do
    mount --rbind "/$d" "$root/$d"
    mount --make-rslave "$root/$d" # nothing unmounted or mounted inside propagates back to the host
done

# the clone is made outside: the root holds only what debootstrap and the commands install
git clone --quiet --no-hardlinks --no-checkout "$repo" "$root/root/fa_cl"
git -C "$root/root/fa_cl" checkout --quiet --detach "$commit"

# ---- the README's two commands ------------------------------------------------------------------

inside() {
    chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${extra_env[@]}" \
        bash -c "cd /root/fa_cl && $1"
}

test_cmd="bash scripts/setup.sh test"
[ $ci = 1 ] && test_cmd="bash .ci/run"
rc=0
t0=$(date +%s)
demo_rc=0
run_job "$logs/demo.log" inside "bash scripts/setup.sh demo" || demo_rc=$?
t_demo=$(($(date +%s) - t0))
t0=$(date +%s)
test_rc=0
run_job "$logs/test.log" inside "$test_cmd" || test_rc=$?
t_test=$(($(date +%s) - t0))
[ $demo_rc = 0 ] && [ $test_rc = 0 ] || rc=1

# ---- summaries ----------------------------------------------------------------------------------

echo
echo "==== bash scripts/setup.sh demo: exit $demo_rc, ${t_demo} s (log: $logs/demo.log)"
grep -E '^fa_cl: (installing|missing)|Device [0-9]+:[0-9]+:' "$logs/demo.log" || true
tail -n 6 "$logs/demo.log"
echo
echo "==== $test_cmd: exit $test_rc, ${t_test} s (log: $logs/test.log)"
grep -E '^fa_cl: ' "$logs/test.log" || true
echo "-- offline and valgrind tests:"
grep -E 'Test +#[0-9]+: (offline_|valgrind_)' "$logs/test.log" | sed 's/^ *[0-9]*\/[0-9]* //' || true
echo "-- ctest's summary:"
# each ctest run's (.ci/run has a second one, the sanitizer build's)
sed -n '/tests passed, .* tests failed out of/,/^Total Test time/p' "$logs/test.log"
awk '/^The following tests (did not run|FAILED):/ { on = 1 } on && NF == 0 { on = 0 } on' "$logs/test.log"
echo
echo "fresh_debian_check.sh: debootstrap ${t_root} s, demo ${t_demo} s, test ${t_test} s;" \
    "$([ $rc = 0 ] && echo PASSED || echo FAILED)"
exit $rc
