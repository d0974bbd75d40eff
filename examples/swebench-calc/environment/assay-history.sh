set -eu
cd /testbed
if [ ! -e .git ]; then exit 0; fi
head="$(git rev-parse HEAD)"
if [ "$head" != "b8501c2ab4ecda5a848f958e939c8a417d6052a8" ] && ! git merge-base --is-ancestor b8501c2ab4ecda5a848f958e939c8a417d6052a8 "$head"; then
  echo "assay: /testbed is at $head, which is not base_commit b8501c2ab4ecda5a848f958e939c8a417d6052a8 nor after it" >&2
  exit 1
fi
branch="$(git symbolic-ref -q --short HEAD || echo main)"
git branch -f assay-base-commit "$head"
rm -rf /tmp/assay-history
git -c protocol.file.allow=always clone -q --no-checkout --no-tags --depth 1 \
  --single-branch --branch assay-base-commit file:///testbed /tmp/assay-history
cd /tmp/assay-history
git config core.logAllRefUpdates false
git remote remove origin
git branch -m assay-base-commit "$branch"
git reflog expire --expire=now --all
git gc -q --prune=now
rm -rf /testbed/.git
mv /tmp/assay-history/.git /testbed/.git
cd /testbed
rm -rf /tmp/assay-history
git reset -q
rm -rf .git/logs .git/ORIG_HEAD
test "$(git rev-parse HEAD)" = "$head"
test "$(git rev-list --all | wc -l)" = 1
test "$(git for-each-ref | wc -l)" = 1
test -z "$(git tag -l)"
test -z "$(git reflog --all)"
