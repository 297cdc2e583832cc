#!/usr/bin/env bash
# Re-split the FA4 wheels that ../shared/tools/stage-fa4.sh left in .peers/a and .peers/b into
# .peers/p1 .. .peers/pN, each small enough to ride beside the working tree in one device call: the
# tree's tracked and untracked-not-ignored files count towards the 64 MiB carry limit, so the part
# size (PART_BYTES) defaults to what the tree leaves of it, less a 4 MB margin. Then make N device
# calls back to back (the machine stays warm ~30 s after a call):
#   calls 1 .. N-1: carry [".peers/pK"]  command: bash tools/speed_round.sh peers_part (+ other steps)
#   call N:         carry [".peers/pN"]  command: source .peers/pN/install.sh && ... (speed_round.sh peers_last)
# Run from the project root on this machine, after stage-fa4.sh.
set -euo pipefail
limit=67108864   # the device tool's carry limit, 64 MiB
# The tree as disk usage (whole blocks), not apparent bytes: a 38 MB part beside a tree of 28 MB
# apparent, 34 MB in blocks, was refused (session 52).
tree=$(git ls-files -co --exclude-standard -z | du -c -B1 --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
room=$((limit - tree - 4000000))
if [ -z "${PART_BYTES:-}" ] && [ "$room" -lt 4000000 ]; then
  echo "stage_fa4_parts.sh: the working tree ($tree bytes) leaves no room for a part under the 64 MiB carry limit" >&2
  exit 1
fi
part=${PART_BYTES:-$room}
[ -f .peers/b/install.sh ] || { echo "run ../shared/tools/stage-fa4.sh first"; exit 1; }
# The wheel's name and checksum come from stage-fa4.sh's install.sh: the line joining the two parts
# into /tmp/<wheel> and its `sha256sum -c` line. A change to that script's format stops here, named.
big=$(sed -n 's|^cat /root/peers/big.part.aa .peers/b/big.part.ab > \(/tmp/[^ ]*\)$|\1|p' .peers/b/install.sh)
check=$(grep -m1 'sha256sum -c' .peers/b/install.sh || true)
if [ -z "$big" ] || [ -z "$check" ]; then
  echo "stage_fa4_parts.sh: .peers/b/install.sh no longer has the lines this script reads" >&2
  echo "  expected 'cat /root/peers/big.part.aa .peers/b/big.part.ab > /tmp/<wheel>' and a 'sha256sum -c' line;" >&2
  echo "  got wheel '${big}', check '${check}'" >&2
  exit 1
fi
rm -rf .peers/split .peers/p[0-9]* && mkdir -p .peers/split
cat .peers/a/big.part.aa .peers/b/big.part.ab | split -b "$part" -d - .peers/split/big.
parts=(.peers/split/big.*)
n=${#parts[@]}
for i in $(seq 1 "$n"); do mkdir -p ".peers/p$i" && mv "${parts[$((i - 1))]}" ".peers/p$i/"; done
# The other wheels ride with the last part, or in a part of their own where they would not fit there.
others=$(du -cb .peers/b/*.whl | tail -n 1 | cut -f1)
if [ $(( $(stat -c %s .peers/p$n/big.*) + others )) -gt "$part" ]; then n=$((n + 1)) && mkdir -p ".peers/p$n"; fi
cp .peers/b/*.whl ".peers/p$n/"
if compgen -G ".peers/p$n/big.*" > /dev/null; then join="cat /root/peers/big.* .peers/p$n/big.* > $big"; else join="cat /root/peers/big.* > $big"; fi
{
  echo "# sourced on the GPU machine from the project root, after calls 1 .. $((n - 1)) left their parts in /root/peers"
  echo "$join"
  echo "$check"
  echo "python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $big .peers/p$n/*.whl"
  echo 'export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:${PYTHONPATH:-}'
} > ".peers/p$n/install.sh"
rm -rf .peers/split
du -sh .peers/p*
