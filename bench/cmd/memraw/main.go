// Command memraw is the raw side of the memory benchmark
// (BenchmarkConsumeMemory): raw amqp091-go that acks every delivery of a
// full queue, prefetch 200, eight goroutines, then prints its resident
// memory. A program of its own, linking amqp091-go and the standard
// library alone, as a service written without warren would.
//
//	memraw URL QUEUE FACTS
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/bench/internal/procstatus"
)

const prefetch, concurrency = 200, 8

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "memraw:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 4 {
		return fmt.Errorf("usage: memraw URL QUEUE FACTS")
	}
	url, queue := os.Args[1], os.Args[2]
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		return fmt.Errorf("facts: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return err
	}
	start, err := procstatus.KB("VmRSS:")
	if err != nil {
		return err
	}
	deliveries, err := ch.Consume(queue, "memory", false, false, false, false, nil)
	if err != nil {
		return err
	}
	var handled atomic.Int64
	var ackErr atomic.Pointer[error]
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for d := range deliveries {
				if err := d.Ack(false); err != nil {
					ackErr.CompareAndSwap(nil, &err)
				}
				if handled.Add(1) == int64(n) {
					close(done)
				}
			}
		})
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("%d of %d facts after 10 minutes", handled.Load(), n)
	}
	if err := ch.Cancel("memory", false); err != nil {
		return err
	}
	wg.Wait()
	if err := ackErr.Load(); err != nil {
		return fmt.Errorf("ack: %w", *err)
	}
	return procstatus.Report(start)
}
