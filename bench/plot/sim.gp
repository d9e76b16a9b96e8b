# SPDX-License-Identifier: MIT
# Plot the CSV series written by `quack sim FILE --out DIR`.
# usage: gnuplot -e "dir='DIR'; title='NAME'" bench/plot/sim.gp   (writes DIR/sim.png)
if (!exists("dir")) dir = "."
if (!exists("title")) title = dir
set datafile separator ","
set terminal pngcairo size 1200,1100 noenhanced font ",10"
set output dir."/sim.png"
links = system("ls ".dir."/link_*.csv 2>/dev/null | xargs -r grep -l -m1 . | while read f; do awk -F, 'NR>1 && ($5>0 || $2>0) {found=1} END {exit !found}' $f && echo $f; done")
flows = system("ls ".dir."/flow_*.csv 2>/dev/null")
short(f) = system("basename ".f." .csv")
set key outside right top
set grid
set multiplot layout 4,1 title title
set ylabel "queue (kB)"
plot for [f in links] f using 1:($2/1000) skip 1 with steps title short(f)
set ylabel "link throughput (Mbit/s)"
plot for [f in links] f using 1:($4/1e6) skip 1 with steps title short(f)
set ylabel "flow goodput (Mbit/s)"
plot for [f in flows] f using 1:($3/1e6) skip 1 with steps title short(f)
set ylabel "drops, marks / interval"
set yrange [0:*]
set xlabel "time (s)"
plot for [f in links] f using 1:6 skip 1 with impulses title short(f)." drops", \
     for [f in links] f using 1:7 skip 1 with points pt 7 ps 0.4 title short(f)." marks"
unset multiplot
