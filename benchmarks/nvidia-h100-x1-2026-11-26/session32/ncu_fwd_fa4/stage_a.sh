#!/usr/bin/env bash
# Session 32, ncu_fwd_fa4 call 1 of 2: FA4's first wheel part to /root/peers.
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "peers part a staged"
