package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/runtime"
)

// memFacts is how many facts each side of BenchmarkConsumeMemory drains
// (WARREN_MEM_FACTS overrides it).
const memFacts = 100_000

// BenchmarkConsumeMemory measures the resident memory of a process that
// drains memFacts envelopes from a classic work queue, prefetch 200,
// eight handler goroutines: the generated consumer against raw amqp091-go
// that only acks. Each side runs in a process of its own (this test
// binary, running TestConsumeMemoryChild), started once the queue is
// full, and reports its peak resident set (VmHWM), its resident set at
// the end (VmRSS) and before its first delivery, connected and consuming
// (start), from /proc/self/status. It runs once whatever b.N:
// the figures are of the whole process, not per message.
func BenchmarkConsumeMemory(b *testing.B) {
	n := memFacts
	if v, err := strconv.Atoi(os.Getenv("WARREN_MEM_FACTS")); err == nil && v > 0 {
		n = v
	}
	e := newEnv(b, "classic")
	measured := map[string][3]float64{}
	runSides(b, []side{
		{"warren", func(b *testing.B) { e.memory(b, "warren", n, measured) }},
		{"amqp091-ack", func(b *testing.B) { e.memory(b, "amqp091-ack", n, measured) }},
	})
}

// memory runs one side's process on its first call and reports its
// figures on every call (the testing package calls a benchmark with b.N 1
// first, then with the -benchtime asked for).
func (e *env) memory(b *testing.B, side string, n int, measured map[string][3]float64) {
	if m, ok := measured[side]; ok {
		b.ReportMetric(m[0], "peak-rss-MiB")
		b.ReportMetric(m[1], "end-rss-MiB")
		b.ReportMetric(m[2], "start-rss-MiB")
		return
	}
	e.fill(b, n, factVersion)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestConsumeMemoryChild$", "-test.v")
	cmd.Env = append(os.Environ(), "WARREN_MEM_SIDE="+side, "WARREN_MEM_URL="+e.url, "WARREN_MEM_FACTS="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v\n%s", side, err, out)
	}
	var hwm, rss, start float64
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "MEMORY %f %f %f", &hwm, &rss, &start); err == nil {
			break
		}
	}
	if hwm == 0 {
		b.Fatalf("%s: no MEMORY line in its output:\n%s", side, out)
	}
	measured[side] = [3]float64{hwm / 1024, rss / 1024, start / 1024}
	b.ReportMetric(hwm/1024, "peak-rss-MiB")
	b.ReportMetric(rss/1024, "end-rss-MiB")
	b.ReportMetric(start/1024, "start-rss-MiB")
}

// TestConsumeMemoryChild is one side of BenchmarkConsumeMemory, in the
// process the benchmark starts; run otherwise, it does nothing.
func TestConsumeMemoryChild(t *testing.T) {
	side, url := os.Getenv("WARREN_MEM_SIDE"), os.Getenv("WARREN_MEM_URL")
	if side == "" {
		t.Skip("a side of BenchmarkConsumeMemory, started by it")
	}
	n, err := strconv.Atoi(os.Getenv("WARREN_MEM_FACTS"))
	if err != nil {
		t.Fatal(err)
	}
	const prefetch, conc = 200, 8
	var start int // VmRSS once connected, before the first delivery
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	switch side {
	case "warren":
		acks := &ackCounter{}
		done := acks.arm(n)
		top := only(benchevents.Topology, "bench-classic")
		conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Metrics: acks})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c, err := benchevents.NewBenchClassicConsumer(conn, memHandler{}, runtime.WithPrefetch(prefetch), runtime.WithConcurrency(conc))
		if err != nil {
			t.Fatal(err)
		}
		start = procStatus(t, "VmRSS:")
		rctx, stop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- c.Run(rctx) }()
		select {
		case <-done:
		case err := <-ran:
			t.Fatalf("consumer stopped early: %v", err)
		case <-ctx.Done():
			t.Fatal("timed out")
		}
		stop()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	case "amqp091-ack":
		conn, err := amqp.Dial(url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.Qos(prefetch, 0, false); err != nil {
			t.Fatal(err)
		}
		start = procStatus(t, "VmRSS:")
		deliveries, err := ch.Consume("bench-classic", "memory", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var handled atomic.Int64
		done := make(chan struct{})
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				for d := range deliveries {
					if err := d.Ack(false); err != nil {
						t.Error(err)
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
			t.Fatal("timed out")
		}
		if err := ch.Cancel("memory", false); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	default:
		t.Fatalf("unknown side %q", side)
	}
	hwm, rss := procStatus(t, "VmHWM:"), procStatus(t, "VmRSS:")
	fmt.Printf("MEMORY %d %d %d\n", hwm, rss, start)
}

// memHandler is the generated consumer's handler: it looks at the fact.
type memHandler struct{}

func (memHandler) HandleOrderPlaced(_ context.Context, _ runtime.Delivery, o benchevents.OrderPlaced) error {
	if len(o.Lines) == 0 {
		return runtime.Permanent(fmt.Errorf("an order without lines"))
	}
	return nil
}

// procStatus returns a kB figure of /proc/self/status.
func procStatus(t *testing.T, field string) int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field); ok {
			v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
