package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// memFacts is how many facts each side of BenchmarkConsumeMemory drains
// (WARREN_MEM_FACTS overrides it).
const memFacts = 100_000

// BenchmarkConsumeMemory measures the resident memory of a process that
// drains memFacts envelopes from a classic work queue, prefetch 200,
// eight handler goroutines: the generated consumer (cmd/memwarren)
// against raw amqp091-go that only acks (cmd/memraw). Each side is a
// program of its own, built once by the benchmark and started once the
// queue is full, so that each carries what a service written that way
// links and no more: the raw side nothing of warren's, neither side the
// benchmarks' test binary. Each reports its peak resident set (VmHWM),
// its resident set at the end (VmRSS), split into anonymous memory and
// mapped files (RssAnon, RssFile), and before its first delivery,
// connected and consuming (start), from /proc/self/status. It runs once
// whatever b.N: the figures are of the whole process, not per message.
func BenchmarkConsumeMemory(b *testing.B) {
	n := memFacts
	if v, err := strconv.Atoi(os.Getenv("WARREN_MEM_FACTS")); err == nil && v > 0 {
		n = v
	}
	bin := b.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./cmd/memwarren", "./cmd/memraw")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build of the memory benchmark's consumers: %v\n%s", err, out)
	}
	e := newEnv(b, "classic")
	measured := map[string][5]float64{}
	runSides(b, []side{
		{"warren", func(b *testing.B) {
			e.memory(b, "warren", exec.Command(filepath.Join(bin, "memwarren"), e.url, strconv.Itoa(n)), n, measured)
		}},
		{"amqp091-ack", func(b *testing.B) {
			e.memory(b, "amqp091-ack", exec.Command(filepath.Join(bin, "memraw"), e.url, "bench-classic", strconv.Itoa(n)), n, measured)
		}},
	})
}

// memory runs one side's process, cmd, on its first call and reports its
// figures on every call (the testing package calls a benchmark with b.N 1
// first, then with the -benchtime asked for).
func (e *env) memory(b *testing.B, side string, cmd *exec.Cmd, n int, measured map[string][5]float64) {
	report := func(m [5]float64) {
		for i, unit := range []string{"peak-rss-MiB", "end-rss-MiB", "start-rss-MiB", "end-anon-MiB", "end-file-MiB"} {
			b.ReportMetric(m[i], unit)
		}
	}
	if m, ok := measured[side]; ok {
		report(m)
		return
	}
	e.fill(b, n, factVersion)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v\n%s", side, err, out)
	}
	var kb [5]float64
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "MEMORY %f %f %f %f %f", &kb[0], &kb[1], &kb[2], &kb[3], &kb[4]); err == nil {
			found = true
			break
		}
	}
	if !found || kb[0] == 0 {
		b.Fatalf("%s: no MEMORY line in its output:\n%s", side, out)
	}
	var m [5]float64
	for i := range kb {
		m[i] = kb[i] / 1024
	}
	measured[side] = m
	report(m)
}
