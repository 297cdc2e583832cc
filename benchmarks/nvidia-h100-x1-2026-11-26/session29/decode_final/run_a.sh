#!/usr/bin/env bash
# Session 29, decode_final call 1 of 2: FA4's large wheel part onto the GPU machine (../shared/tools/stage-fa4.sh).
mkdir -p /root/peers && cp .peers/a/* /root/peers/
