// Command gencost measures what generated code costs the people who use it,
// for warren and two peers given the same facts: how long the generator
// takes (the whole process, wall clock), how many lines of Go it writes per
// fact, and how long `go build` of the generated package takes with its
// dependencies already compiled. scripts/gencost builds the generators and
// runs it; docs/BENCHMARKS.md ("Generated code: build time, size,
// generation time") reports its table.
//
//	gencost -bin DIR -work DIR -root DIR [-rounds N] [-generate 100,1000] [-build 100] [-versions ...]
//	gencost -table FILE...
//
// The sides:
//   - warren: `warren generate` of the synthetic schema directory
//     (internal/synthetic): types with their codecs, publisher, consumers,
//     topology.
//   - asyncapi-codegen (github.com/lerenn/asyncapi-codegen): the AsyncAPI 3
//     document that `warren asyncapi` writes for the same directory, adapted
//     where asyncapi-codegen cannot read it or writes code that does not
//     compile (see adaptAsyncAPI); types, user and application sides, its
//     defaults.
//   - go-jsonschema (github.com/atombender/go-jsonschema): the same schema
//     files, as they are; types only, its defaults.
//   - floor, generation only: a process that reads the schema directory
//     and writes files of the names, sizes and line counts of warren's
//     output, computing nothing (floor.go): the file system's share of
//     warren's time.
//
// Each round runs every case once, and within a case every side back to
// back, starting with a different side each round, so that the load of the
// shared machine falls on all sides alike. Each measurement is one line of
// -work/rounds.txt, and the table (medians, min–max, warren's ratio to each
// peer within each round) is printed from those lines; -table prints it
// again from kept files, pooling the rounds of several sessions of the same
// versions.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	var (
		bin      = flag.String("bin", "", "`DIR` holding the warren, asyncapi-codegen and go-jsonschema binaries")
		work     = flag.String("work", "", "`DIR` for inputs, outputs, build modules and caches (emptied first)")
		root     = flag.String("root", "", "`DIR` of warren's module, which the generated warren package builds against")
		rounds   = flag.Int("rounds", 3, "interleaved `N` rounds")
		generate = flag.String("generate", "100,1000", "fact `COUNTS` to generate and count lines for")
		build    = flag.String("build", "100", "fact `COUNTS` whose generated package to build (empty: none)")
		versions = flag.String("versions", "", "`SIDE=VERSION,...` for the table's header (asyncapi-codegen's is also the version its generated code is built with)")
		table    = flag.Bool("table", false, "print the table of the kept rounds files named as arguments, their rounds pooled, and exit")
		floor    = flag.Bool("floor", false, "run as the floor: `gencost -floor LIST SCHEMAS OUT` (see floor.go)")
	)
	flag.Parse()
	if *floor {
		if flag.NArg() != 3 {
			fmt.Fprintln(os.Stderr, "gencost: -floor LIST SCHEMAS OUT")
			os.Exit(2)
		}
		if err := runFloor(flag.Arg(0), flag.Arg(1), flag.Arg(2)); err != nil {
			fmt.Fprintln(os.Stderr, "gencost: floor:", err)
			os.Exit(1)
		}
		return
	}
	if *table {
		if flag.NArg() == 0 {
			fmt.Fprintln(os.Stderr, "gencost: -table: name the rounds files")
			os.Exit(2)
		}
		if err := printTable(flag.Args()...); err != nil {
			fmt.Fprintln(os.Stderr, "gencost:", err)
			os.Exit(1)
		}
		return
	}
	if *bin == "" || *work == "" || *root == "" || *rounds < 1 {
		flag.Usage()
		os.Exit(2)
	}
	gen, err := counts(*generate)
	if err == nil && len(gen) == 0 {
		err = fmt.Errorf("-generate: no fact count")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencost:", err)
		os.Exit(2)
	}
	builds, err := counts(*build)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencost:", err)
		os.Exit(2)
	}
	vers, err := parseVersions(*versions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencost:", err)
		os.Exit(2)
	}
	r := &runner{
		bin: abs(*bin), work: abs(*work), root: abs(*root), versions: vers,
		rounds: *rounds, generate: gen, build: builds,
	}
	if err := r.run(); err != nil {
		fmt.Fprintln(os.Stderr, "gencost:", err)
		os.Exit(1)
	}
	if err := printTable(filepath.Join(r.work, "rounds.txt")); err != nil {
		fmt.Fprintln(os.Stderr, "gencost:", err)
		os.Exit(1)
	}
}

// counts parses a comma-separated list of fact counts.
func counts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("fact count %q: want a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseVersions parses SIDE=VERSION,... into a map.
func parseVersions(s string) (map[string]string, error) {
	out := map[string]string{}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		side, v, ok := strings.Cut(f, "=")
		if !ok || side == "" || v == "" {
			return nil, fmt.Errorf("-versions: %q is not SIDE=VERSION", f)
		}
		out[side] = v
	}
	return out, nil
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
