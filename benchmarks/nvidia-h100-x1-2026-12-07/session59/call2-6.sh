#!/usr/bin/env bash
# Session 59, calls 2-6 as run on the same warm H100 after call1.sh (one command each; the device's
# $OUT comes back to callN/). Each block below is one call.
case "${1:?call number 2-6}" in
  2)  # carry .peers/p2: FA4 part 2, then call5.sh's d = 64 tile sweep (call 1's had no PYTHONPATH)
    mkdir -p /root/peers && cp .peers/p2/big.* /root/peers/ && ls /root/peers && export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c && timeout 280 python3 tools/fwd_tune.py 64 --interleave --soak-ms=200 --tiles="192,128,2,1,0,1;128,128,2,1,1,1;128,192,2,1,1,1;128,192,2,1,0,1;128,224,2,1,1,1" > $OUT/tune64.log 2>&1; echo "== tune rc=$?"; tail -n 40 $OUT/tune64.log ;;
  3)  # carry .peers/p3
    mkdir -p /root/peers && cp .peers/p3/big.* /root/peers/ && ls /root/peers ;;
  4)  # carry .peers/p4: the final run with FA4 (as session57/call5.sh)
    FINAL_DTYPES=bf16 FINAL_LIMIT=500 bash tools/speed_round.sh peers_last final; ls $OUT ;;
  5)  # short d = 64 tiles, 1k / 1.5k
    export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c && timeout 200 python3 tools/fwd_tune.py 64 --interleave --soak-ms=200 --seqlen=1024,1536 --tiles="128,128,2,0,0,1;128,128,2,1,1,1;128,128,2,1,0,1;192,128,2,1,0,1" > $OUT/tune64s.log 2>&1; echo "rc=$?"; grep -v "^OK" $OUT/tune64s.log | tail -30 ;;
  6)  # the same, 512 / 1k / 2k / 3k
    export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c && timeout 200 python3 tools/fwd_tune.py 64 --interleave --soak-ms=200 --seqlen=512,1024,2048,3072 --tiles="128,128,2,0,0,1;192,128,2,1,0,1;128,128,2,0,0,0" > $OUT/tune64q.log 2>&1; echo "rc=$?"; grep -v "^OK" $OUT/tune64q.log | tail -40 ;;
esac
