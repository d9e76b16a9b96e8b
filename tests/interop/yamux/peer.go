// SPDX-License-Identifier: MIT
// Interop peer for quack's yamux (tests/interop/yamux.sh), on hashicorp/yamux
// as Debian ships it (GO111MODULE=off GOPATH=/usr/share/gocode go build).
//
//	peer server ADDR                 echo server: every stream is copied back,
//	                                 FIN answered with FIN; prints "listening on ADDR"
//	peer client ADDR STREAMS BYTES   opens STREAMS concurrent streams of about BYTES
//	                                 each (stream i sends BYTES*(i+1)/STREAMS+i), checks the
//	                                 echo's SHA-256, closes, pings, sends GoAway
//	peer sink ADDR CSV               accept one session, read its first stream to EOF,
//	                                 log Mbit/s per 100 ms (bench/yamux.sh: hashicorp's
//	                                 own fixed 256 KiB window as the receiver)
//
// Prints one "ok ..." line, or "FAIL ..." and exits 1.
package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

func fail(f string, a ...interface{}) {
	fmt.Printf("FAIL "+f+"\n", a...)
	os.Exit(1)
}

func config() *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = os.Stderr
	c.AcceptBacklog = 1024
	return c
}

func pattern(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func server(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fail("listen: %v", err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			fail("accept: %v", err)
		}
		go func(c net.Conn) {
			s, err := yamux.Server(c, config())
			if err != nil {
				fail("session: %v", err)
			}
			for {
				st, err := s.AcceptStream()
				if err != nil {
					return // session ended (GoAway, EOF)
				}
				go func(st *yamux.Stream) {
					if _, err := io.Copy(st, st); err != nil {
						fmt.Fprintf(os.Stderr, "peer: echo %d: %v\n", st.StreamID(), err)
					}
					st.Close() // half-close: FIN after the echo
				}(st)
			}
		}(c)
	}
}

func client(addr string, streams, size int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fail("dial: %v", err)
	}
	s, err := yamux.Client(c, config())
	if err != nil {
		fail("session: %v", err)
	}
	rtt, err := s.Ping()
	if err != nil {
		fail("ping: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	total := 0
	for i := 0; i < streams; i++ {
		n := size*(i+1)/streams + i
		total += n
		wg.Add(1)
		go func(i, n int) {
			defer wg.Done()
			st, err := s.OpenStream()
			if err != nil {
				errs <- fmt.Errorf("open %d: %v", i, err)
				return
			}
			data := pattern(i, n)
			// This hashicorp/yamux (Debian) ends reading at Close(), so the
			// client writes, reads the whole echo, then half-closes; the
			// quack client tests FIN-before-echo against the Go server.
			go st.Write(data)
			got := make([]byte, n)
			if _, err := io.ReadFull(st, got); err != nil {
				errs <- fmt.Errorf("stream %d read: %v", i, err)
				return
			}
			st.Close()
			a, b := sha256.Sum256(data), sha256.Sum256(got)
			if !bytes.Equal(a[:], b[:]) {
				errs <- fmt.Errorf("stream %d: sent %d bytes sha256 %x, echo %d bytes %x", i, n, a[:4], len(got), b[:4])
			}
		}(i, n)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		fail("%v", e)
	}
	if err := s.GoAway(); err != nil {
		fail("goaway: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	fmt.Printf("ok streams=%d bytes=%d sha256-equal ping=%v\n", streams, total, rtt)
	s.Close()
}

func sink(addr, csv string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fail("listen: %v", err)
	}
	fmt.Printf("listening on %s\n", l.Addr())
	c, err := l.Accept()
	if err != nil {
		fail("accept: %v", err)
	}
	s, err := yamux.Server(c, config())
	if err != nil {
		fail("session: %v", err)
	}
	st, err := s.AcceptStream()
	if err != nil {
		fail("accept stream: %v", err)
	}
	f, err := os.Create(csv)
	if err != nil {
		fail("csv: %v", err)
	}
	defer f.Close()
	fmt.Fprintln(f, "t_s,mbps,window_bytes,credit_bytes,srtt_ms,min_rtt_ms,delivery_rtt_bytes")
	buf := make([]byte, 256*1024)
	start := time.Now()
	mark, got, gotMark := start, 0, 0
	for {
		n, err := st.Read(buf)
		got += n
		now := time.Now()
		if dt := now.Sub(mark); dt >= 100*time.Millisecond || err != nil {
			fmt.Fprintf(f, "%.2f,%.2f,%d,0,0,0,0\n", now.Sub(start).Seconds(),
				float64(got-gotMark)*8/dt.Seconds()/1e6, 256*1024)
			mark, gotMark = now, got
		}
		if err != nil {
			break
		}
	}
	fmt.Printf("ok received=%d seconds=%.2f peak_credit=%d\n", got, time.Since(start).Seconds(), 256*1024)
}

func main() {
	if len(os.Args) < 3 {
		fail("usage: peer server ADDR | peer client ADDR STREAMS BYTES")
	}
	switch os.Args[1] {
	case "server":
		server(os.Args[2])
	case "client":
		if len(os.Args) < 5 {
			fail("client needs ADDR STREAMS BYTES")
		}
		n, _ := strconv.Atoi(os.Args[3])
		b, _ := strconv.Atoi(os.Args[4])
		client(os.Args[2], n, b)
	case "sink":
		if len(os.Args) < 4 {
			fail("sink needs ADDR CSV")
		}
		sink(os.Args[2], os.Args[3])
	default:
		fail("unknown mode %s", os.Args[1])
	}
}
