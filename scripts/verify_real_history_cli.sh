#!/usr/bin/env bash
# Replays real upstream backports through the CLI: `backport new` exports a commit that landed
# on one branch, `backport apply --no-push --skip-tests` applies it to the four branches as they
# stood before it landed, and every resulting file is compared with what really merged.
# Needs a local copy of Ascend/pytorch: bash scripts/verify_real_history_cli.sh MIRROR_GIT_DIR
set -euo pipefail
MIRROR=${1:?usage: $0 MIRROR_GIT_DIR}
BACKPORT=${BACKPORT:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/backport}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail=0

# case name | commit to export | target:pre-state:landed ...
replay() {
  local name=$1 from=$2; shift 2
  local up="$WORK/$name-up.git" proj="$WORK/$name"
  git clone -q --bare --shared "$MIRROR" "$up"
  git -C "$up" for-each-ref --format='%(refname)' refs/heads refs/tags | xargs -n1 git -C "$up" update-ref -d
  git -C "$up" config uploadpack.allowFilter true
  git -C "$up" config uploadpack.allowAnySHA1InWant true
  mkdir -p "$proj"
  git init -q --bare "$WORK/$name-fork.git"
  {
    echo "forge: local"; echo "upstream: Ascend/pytorch"; echo "fork: lgxxx/pytorch"
    echo "upstream_url: $up"; echo "fork_url: $WORK/$name-fork.git"
    echo "environments: {any: {python: python3}}"; echo "branches:"
  } > "$proj/branches.yaml"
  for spec in "$@"; do
    IFS=: read -r target pre landed <<<"$spec"
    git -C "$up" update-ref "refs/heads/$target" "$pre"
    echo "  $target: {env: any}" >> "$proj/branches.yaml"
  done
  (cd "$proj" && "$BACKPORT" -q new "$name" --from "$from" --repo "$MIRROR" \
      --api "real.$name" --issue 1 >/dev/null)
  (cd "$proj" && BACKPORT_CACHE="$WORK/cache" "$BACKPORT" -q apply --api "$name" --no-push \
      --skip-tests >/dev/null) || true
  printf '%-12s %-8s %-10s %-10s %-40s %s\n' case target pre-state landed file identical
  for spec in "$@"; do
    IFS=: read -r target pre landed <<<"$spec"
    wt="$proj/.backport/worktrees/$name/$target"
    for file in $(git --git-dir="$MIRROR" diff --name-only "$landed^" "$landed"); do
      want=$(git --git-dir="$MIRROR" rev-parse "$landed:$file")
      got=$(git -C "$wt" rev-parse "HEAD:$file" 2>/dev/null || echo missing)
      same=no; [ "$want" = "$got" ] && same=yes || fail=1
      printf '%-12s %-8s %-10s %-10s %-40s %s\n' "$name" "$target" "${pre:0:9}" "${landed:0:9}" "$file" "$same"
    done
  done
}

# test/npu/test_storage.py: the file differs between branches, hunks land at shifted lines.
replay storage 5d31bd158 v2.7.1:8e3b6fa22:5d31bd158 v2.11.0:8ff4ed75e:222586bd5 \
  v2.12.0:c2049ff97:ebe617952 master:ab460fe79:bb3c4de16
# test/distributed/test_c10d_mpi.py: a commit that adds a new file.
replay c10d_mpi 5e2971462 v2.7.1:265b04922:5e2971462 v2.11.0:7f9562df5:efece4935 \
  v2.12.0:3b84ef257:c42ba3d85 master:4f0993e6a:e89e960be
[ "$fail" = 0 ] && echo "all identical" || { echo "DIFFERENCES FOUND"; exit 1; }
