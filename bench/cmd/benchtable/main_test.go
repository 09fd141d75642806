package main

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	out := `goos: linux
BenchmarkConsume/classic/prefetch=10/concurrency=1/warren-2   2000  500 ns/op  10.0 cpu-us/msg  1000 msgs/s  100 B/op  60 allocs/op
BenchmarkConsume/classic/prefetch=10/concurrency=1/amqp091-ack-2  2000  400 ns/op  5.0 cpu-us/msg  2000 msgs/s  50 B/op  30 allocs/op
BenchmarkConsume/classic/prefetch=10/concurrency=1/amqp091-ack-2  2000  400 ns/op  5.0 cpu-us/msg  1000 msgs/s  50 B/op  30 allocs/op
BenchmarkConsume/classic/prefetch=10/concurrency=1/warren-2   2000  500 ns/op  20.0 cpu-us/msg  900 msgs/s  100 B/op  60 allocs/op
BenchmarkConsume/classic/prefetch=10/concurrency=1/warren-2   2000  500 ns/op  10.0 cpu-us/msg  1200 msgs/s  100 B/op  60 allocs/op
BenchmarkConsume/classic/prefetch=10/concurrency=1/amqp091-ack-2  2000  400 ns/op  10.0 cpu-us/msg  1000 msgs/s  50 B/op  30 allocs/op
`
	s := &series{sides: map[string][]string{}, runs: map[string]map[string][]result{}}
	if err := parse(strings.NewReader(out), s); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeTable(&b, s)
	// Round ratios 0.5, 0.9, 1.2: median 0.9.
	want := "\n| case | rounds | warren msgs/s | vs amqp091-ack | CPU µs/msg: warren, amqp091-ack | allocs/msg: warren, amqp091-ack |\n" +
		"|---|---:|---:|---:|---:|---:|\n" +
		"| Consume/classic/prefetch=10/concurrency=1 | 3 | 1000 | **0.90** (0.50–1.20) | 10, 5 | 60, 30 |\n"
	if got := b.String(); got != want {
		t.Errorf("table:\n got %q\nwant %q", got, want)
	}
}
