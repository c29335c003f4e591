// Command example is a toy operator that drains with drainguard.
//
// N workers run "reconciles" of random length while intake is open. On a
// drain it stops taking work, lets the reconciles in flight finish (or gives
// up at the drain deadline) and tells drainguard "drained"; on SIGTERM or
// SIGINT it interrupts whatever still runs and exits 0.
//
// Lines on stdout, for tests to read:
//
//	ready | reconcile start ID | reconcile done ID | reconcile interrupted ID
//	drain received | drained sent | exit
//
// The client's own diagnostics go to stderr.
//
//	drainguard run -- example -workers 3 -min 200ms -max 2s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	drainguard "github.com/drainguard/drainguard/clients/go"
)

func main() {
	workers := flag.Int("workers", 3, "number of concurrent reconcile workers")
	minDur := flag.Duration("min", 200*time.Millisecond, "shortest reconcile")
	maxDur := flag.Duration("max", 2*time.Second, "longest reconcile")
	flag.Parse()
	if *workers < 1 || *minDur < 0 || *maxDur < *minDur {
		fmt.Fprintln(os.Stderr, "example: need -workers >= 1 and 0 <= -min <= -max")
		os.Exit(2)
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	dg := drainguard.New(drainguard.Options{Name: "drainguard-example", Logf: log.New(os.Stderr, "", log.LstdFlags).Printf})
	defer fmt.Println("exit")
	defer dg.Close()

	select {
	case <-dg.Ready(): // connected, or no socket configured
	case <-signals:
		return
	}
	fmt.Println("ready")

	stop := make(chan struct{}) // closed on SIGTERM: interrupt everything
	var wg sync.WaitGroup
	var lastID int64
	for i := 0; i < *workers; i++ {
		wg.Add(1)
		rnd := rand.New(rand.NewSource(time.Now().UnixNano() + int64(i)))
		go func() {
			defer wg.Done()
			for dg.IntakeContext().Err() == nil {
				id := atomic.AddInt64(&lastID, 1)
				d := *minDur + time.Duration(rnd.Int63n(int64(*maxDur-*minDur)+1))
				if err := dg.Track(func(ctx context.Context) error { return reconcile(ctx, stop, id, d) }); errors.Is(err, drainguard.ErrDraining) {
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}

	draining, drainedSent := dg.Draining(), (<-chan struct{})(nil)
	for {
		select {
		case <-draining:
			fmt.Println("drain received")
			draining, drainedSent = nil, dg.DrainedSent()
		case <-drainedSent:
			fmt.Println("drained sent")
			drainedSent = nil
		case <-signals:
			close(stop)
			wg.Wait()
			return
		}
	}
}

// reconcile pretends to work for d. ctx ends at the drain deadline, stop on
// SIGTERM.
func reconcile(ctx context.Context, stop <-chan struct{}, id int64, d time.Duration) error {
	fmt.Println("reconcile start", id)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		fmt.Println("reconcile done", id)
		return nil
	case <-ctx.Done():
	case <-stop:
	}
	fmt.Println("reconcile interrupted", id)
	return errors.New("interrupted")
}
