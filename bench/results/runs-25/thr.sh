#!/usr/bin/env bash
# thr.sh NAME BIN CONNS DEPTH: 1 % churn; per-thread CPU of server over 10 s, plus generator and system
set -u
NAME=$1 BIN=$2 CONNS=$3 DEPTH=$4
dir=/tmp/prof/$NAME; rm -rf $dir; mkdir -p $dir
port=$((20000 + RANDOM % 20000)); http=$((port+1))
printf "listenPort=$port\nbindAddress=127.0.0.1\nhttpListenPort=$http\nkvConfigPath=$dir/kvConfig.json\n" > $dir/ns.properties
HOME=$dir $BIN -c $dir/ns.properties > $dir/server.log 2>&1 &
pid=$!
sleep 1
/work/main/target/release/nsbench load --addr 127.0.0.1:$port --clusters 100 --brokers 2 --topics 10000 --churn --changing --skip-s1 --churn-ms 2000 --conns $CONNS --depth $DEPTH --warmup-ms 2000 --measure-ms 18000 > $dir/load.log 2>&1 &
lpid=$!
snap() { for t in /proc/$pid/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done | awk '{a[$1]+=$2} END {for (k in a) print k, a[k]}' | sort; echo "GEN $(awk '{print $14+$15}' /proc/$lpid/stat)"; echo "SYS $(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)"; }
sleep 8
snap > $dir/t0; r0=$(curl -s localhost:$http/metrics | awk '/^rocketmq_namesrv_registrations_total/ {s+=$2} END {print s}')
sleep 10
snap > $dir/t1; r1=$(curl -s localhost:$http/metrics | awk '/^rocketmq_namesrv_registrations_total/ {s+=$2} END {print s}')
wait $lpid
kill $pid; wait $pid 2>/dev/null
echo "$NAME: $((r1-r0)) registrations in 10 s"; join $dir/t0 $dir/t1 | awk '{printf "%-18s %6.2f cores\n", $1, ($3-$2)/1000}'
grep "S2" $dir/load.log
