package generator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/gogen"
	"github.com/warrenbus/warren/internal/synthetic"
)

// writeSynthetic writes the synthetic schema directory of n facts
// (internal/synthetic: scalars, an optional field, a nested object, an enum,
// an array of objects and a $ref to a shared definition, spread over 10
// domains with one consumer each) into a temporary directory.
func writeSynthetic(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := synthetic.Write(dir, n); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// BenchmarkGenerate generates packages of 100, 1,000 and 5,000 facts from
// disk to formatted Go source. ns/fact should stay flat as the count grows
// (linear cost). Beside each size runs its baseline, the work no generator
// can skip: read and decode every schema file with encoding/json, and gofmt
// the same output. docs/BENCHMARKS.md records the ratio.
func BenchmarkGenerate(b *testing.B) {
	// as warren generate runs: without formatting each file with
	// go/format again to compare (layout_test.go)
	gogen.VerifyLayout = false
	defer func() { gogen.VerifyLayout = true }()
	for _, n := range []int{100, 1000, 5000} {
		dir := writeSynthetic(b, n)
		out, err := generator.Generate(context.Background(), dir, generator.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("facts=%d/baseline", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				baseline(b, dir, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/fact")
		})
		b.Run(fmt.Sprintf("facts=%d/generate", n), func(b *testing.B) {
			b.ReportAllocs()
			var files int
			for b.Loop() {
				out, err := generator.Generate(context.Background(), dir, generator.Options{})
				if err != nil {
					b.Fatal(err)
				}
				files = len(out)
			}
			if files != n+7 { // one per fact, money.json, warren.go, schemas.go, topology.go, publisher.go, outbox.go, consumers.go
				b.Fatalf("generated %d files, want %d", files, n+7)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/fact")
		})
	}
}

// baseline reads and decodes every schema file and gofmts every output file.
func baseline(b *testing.B, dir string, out map[string][]byte) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var v any
		return json.Unmarshal(src, &v)
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, src := range out {
		if _, err := format.Source(src); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSyntheticGenerates guards the benchmark input: the synthetic directory
// must generate without errors (checked on a small size).
func TestSyntheticGenerates(t *testing.T) {
	files, err := generator.Generate(context.Background(), writeSynthetic(t, 20), generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 20 fact files, a shared definition, warren.go, schemas.go,
	// topology.go, publisher.go, outbox.go and consumers.go.
	if len(files) != 27 {
		t.Errorf("generated %d files, want 27", len(files))
	}
}
