#!/usr/bin/env bash
# loadtest/scripts/quiet-run.sh CMD...: run CMD while every process outside its tree (and outside this script's
# ancestors) runs under SCHED_IDLE (CPU only when nothing else wants it); put them back to
# SCHED_OTHER afterwards. For benchmarks on a shared 2-core box. Needs autogroup off:
# echo 0 > /proc/sys/kernel/sched_autogroup_enabled
"$@" &
bench=$!
pick() { # pids to demote: not bench's tree, not our ancestors, not already idle
  ps -eo pid=,ppid=,cls= | awk -v bench="$bench" -v me="$$" '
    { parent[$1]=$2; cls[$1]=$3; pids[NR]=$1 }
    END {
      a=me; while (a>1) { anc[a]=1; a=parent[a] }
      for (i in pids) { p=pids[i]; q=p; keep=0
        while (q>1) { if (q==bench) { keep=1; break }; q=parent[q] }
        if (!keep && !(p in anc) && cls[p]=="TS") print p }
    }'
}
while kill -0 $bench 2>/dev/null; do
  for p in $(pick); do chrt -i -p 0 "$p" >/dev/null 2>&1; done
  sleep 0.5
done
wait $bench; rc=$?
for p in $(ps -eo pid=,cls= | awk '$2=="IDL" {print $1}'); do chrt -o -p 0 "$p" >/dev/null 2>&1; done
exit $rc
