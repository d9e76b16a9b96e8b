# SPDX-License-Identifier: MIT
# ACK-frequency experiment bars: goodput (left) and ACKs per data packet (right).
# gnuplot -e "dat='F'; png='OUT.png'; title='T'" bench/plot/ackfreq.gp
set terminal pngcairo size 900,420 font ",10"
set output png
set multiplot layout 1,2 title title
set style fill solid 0.7 border -1
set boxwidth 0.6
set grid ytics
set yrange [0:*]
set title "goodput (Mbit/s)"
plot dat using 0:2:xtic(1) with boxes lc rgb "#3a7bd5" notitle, \
     dat using 0:2:(sprintf("%.1f", $2)) with labels offset 0,0.7 notitle
set title "ACK frames per data packet"
plot dat using 0:3:xtic(1) with boxes lc rgb "#d5803a" notitle, \
     dat using 0:3:(sprintf("%.3f", $3)) with labels offset 0,0.7 notitle
unset multiplot
