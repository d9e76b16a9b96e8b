# SPDX-License-Identifier: MIT
# Plot bench_flowtune CSV series: goodput, receive windows, buffered bytes.
# usage: gnuplot -e "out='X.png'; title='T'; files='a.csv b.csv'; names='A B'" bench/plot/flowtune.gp
if (!exists("title")) title = ""
set datafile separator ","
set terminal pngcairo size 1100,900 noenhanced font ",10"
set output out
set key outside right top
set grid
set multiplot layout 3,1 title title
set ylabel "goodput (Mbit/s)"
plot for [i=1:words(files)] word(files,i) using 1:($2/1e6) skip 1 with steps title word(names,i)
set ylabel "receive window (MB)"
set logscale y
plot for [i=1:words(files)] word(files,i) using 1:($4/1e6) skip 1 with steps title word(names,i)." stream", \
     for [i=1:words(files)] word(files,i) using 1:($3/1e6) skip 1 with steps dt 2 title word(names,i)." conn"
unset logscale y
set ylabel "buffered (MB)"
set xlabel "time (s)"
plot for [i=1:words(files)] word(files,i) using 1:($5/1e6) skip 1 with steps title word(names,i)
unset multiplot
