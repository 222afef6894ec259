#!/usr/bin/env bash
# snapw.sh NAME BIN: 1 % churn with 64x8 readers at 1M topics; server CPU and snapshot writes over 20 s of it
set -u
NAME=$1 BIN=$2
dir=/tmp/prof/$NAME; rm -rf $dir; mkdir -p $dir
port=$((20000 + RANDOM % 20000)); http=$((port+1))
printf "listenPort=$port\nbindAddress=127.0.0.1\nhttpListenPort=$http\nkvConfigPath=$dir/kvConfig.json\n" > $dir/ns.properties
HOME=$dir $BIN -c $dir/ns.properties > $dir/server.log 2>&1 &
pid=$!
sleep 1
/work/main/target/release/nsbench load --addr 127.0.0.1:$port --clusters 100 --brokers 2 --topics 10000 --churn --changing --skip-s1 --churn-ms 2000 --conns 64 --depth 8 --warmup-ms 2000 --measure-ms 26000 > $dir/load.log 2>&1 &
lpid=$!
tck=$(getconf CLK_TCK)
m() { curl -s localhost:$http/metrics | awk -v k="$1" '$0 ~ "^"k {s+=$2} END {print s+0}'; }
sleep 8
c0=$(awk '{print $14+$15}' /proc/$pid/stat); w0=$(m rocketmq_namesrv_route_snapshot_writes_total)
sleep 20
c1=$(awk '{print $14+$15}' /proc/$pid/stat); w1=$(m rocketmq_namesrv_route_snapshot_writes_total)
wait $lpid
kill $pid; wait $pid 2>/dev/null
echo "$NAME: server CPU $(echo "scale=2; ($c1-$c0)/$tck" | bc) s, snapshot writes $((w1-w0)) in 20 s; $(grep '^S2 ' $dir/load.log | head -1 | cut -c1-40)"
