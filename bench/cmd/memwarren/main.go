// Command memwarren is warren's side of the memory benchmark
// (BenchmarkConsumeMemory): the generated consumer of the benchmarks'
// order draining a full classic queue, prefetch 200, eight handler
// goroutines, then printing its resident memory. A program of its own, as
// a service is: it links warren's runtime and the generated package, and
// nothing the benchmarks' test binary carries besides.
//
//	memwarren URL FACTS
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/bench/internal/benchtop"
	"github.com/warrenbus/warren/bench/internal/procstatus"
	"github.com/warrenbus/warren/runtime"
)

const prefetch, concurrency = 200, 8

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "memwarren:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 3 {
		return fmt.Errorf("usage: memwarren URL FACTS")
	}
	url := os.Args[1]
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		return fmt.Errorf("facts: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	acks := &ackCounter{target: int64(n), done: make(chan struct{})}
	top := benchtop.Only(benchevents.Topology, "bench-classic")
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Metrics: acks})
	if err != nil {
		return err
	}
	defer conn.Close()
	c, err := benchevents.NewBenchClassicConsumer(conn, handler{}, runtime.WithPrefetch(prefetch), runtime.WithConcurrency(concurrency))
	if err != nil {
		return err
	}
	start, err := procstatus.KB("VmRSS:")
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(rctx) }()
	select {
	case <-acks.done:
	case err := <-ran:
		return fmt.Errorf("consumer stopped early: %w", err)
	case <-ctx.Done():
		return fmt.Errorf("%d of %d facts acked after 10 minutes", acks.n.Load(), n)
	}
	stop()
	if err := <-ran; err != nil {
		return err
	}
	return procstatus.Report(start)
}

// handler is the generated consumer's handler: it looks at the fact.
type handler struct{}

func (handler) HandleOrderPlaced(_ context.Context, _ runtime.Delivery, o benchevents.OrderPlaced) error {
	if len(o.Lines) == 0 {
		return runtime.Permanent(errors.New("an order without lines"))
	}
	return nil
}

// ackCounter is the Conn's Metrics: it closes done at the target-th ack.
type ackCounter struct {
	n      atomic.Int64
	target int64
	once   sync.Once
	done   chan struct{}
}

func (a *ackCounter) Count(_ string, e runtime.Event, _ string) {
	if e == runtime.Acked && a.n.Add(1) >= a.target {
		a.once.Do(func() { close(a.done) })
	}
}

func (*ackCounter) ObserveHandler(string, string, time.Duration, error) {}
func (*ackCounter) Paused(string)                                       {}
func (*ackCounter) Resumed(string, time.Duration)                       {}
