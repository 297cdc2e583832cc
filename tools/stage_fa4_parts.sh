#!/usr/bin/env bash
# Re-split the FA4 wheels that ../shared/tools/stage-fa4.sh left in .peers/a and .peers/b into
# .peers/p1 .. .peers/pN, each small enough to ride beside the working tree in one device call (the
# tree's tracked files count towards the 64 MiB carry limit: PART_BYTES, default 38 MB). Then make N
# device calls back to back (the machine stays warm ~30 s after a call):
#   calls 1 .. N-1: carry [".peers/pK"]  command: bash tools/speed_round.sh peers_part (+ other steps)
#   call N:         carry [".peers/pN"]  command: source .peers/pN/install.sh && ... (speed_round.sh peers_last)
# Run from the project root on this machine, after stage-fa4.sh.
set -euo pipefail
part=${PART_BYTES:-38000000}
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
cp .peers/b/*.whl ".peers/p$n/"
{
  echo "# sourced on the GPU machine from the project root, after calls 1 .. $((n - 1)) left their parts in /root/peers"
  echo "cat /root/peers/big.* .peers/p$n/big.* > $big"
  echo "$check"
  echo "python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $big .peers/p$n/*.whl"
  echo 'export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:${PYTHONPATH:-}'
} > ".peers/p$n/install.sh"
rm -rf .peers/split
du -sh .peers/p*
