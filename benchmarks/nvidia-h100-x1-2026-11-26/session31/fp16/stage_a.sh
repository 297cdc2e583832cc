#!/usr/bin/env bash
# Session 31 fp16, call 1: FA4's first wheel part copied to /root/peers for call 2.
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "peers part a staged"
