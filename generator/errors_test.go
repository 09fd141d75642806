package generator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator"
)

// TestErrorsAreDeterministic runs every failing golden case (several kinds
// of errors in several files: golden/error-many-files,
// golden/error-manifest-names, ...) 20 times, through Generate and
// through what `warren check` calls (Open, then the lint rules when the
// directory loads), and expects byte-identical errors every time. Map
// iteration and the loader's parallel passes must never show in what a
// user reads: a message that moves between runs points at the wrong place
// in at least one of them.
func TestErrorsAreDeterministic(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join(goldenDir, "*", "stderr.txt"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no failing golden cases (%v)", err)
	}
	ctx := context.Background()
	for _, stderr := range cases {
		dir := filepath.Join(filepath.Dir(stderr), "events")
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		t.Run(filepath.Base(filepath.Dir(stderr)), func(t *testing.T) {
			run := func() (gen, check string) {
				if _, err := generator.Generate(ctx, dir, generator.Options{}); err != nil {
					gen = err.Error()
				}
				// warren check: Open, and the findings of a directory
				// that loads, besides the errors.
				p, err := generator.Open(ctx, dir, generator.Options{Go: true})
				lines := []string{fmt.Sprint(err)}
				if p != nil {
					for _, f := range p.Lint() {
						lines = append(lines, f.String())
					}
				}
				return gen, strings.Join(lines, "\n")
			}
			gen, check := run()
			if gen == "" {
				t.Fatal("Generate succeeded")
			}
			for i := range 20 {
				if g, c := run(); g != gen || c != check {
					t.Fatalf("run %d differs from the first:\nGenerate:\n%s\nfirst:\n%s\ncheck:\n%s\nfirst:\n%s", i+2, g, gen, c, check)
				}
			}
		})
	}
}
