// Command benchtable reads the output of interleaved benchmark rounds (go
// test -bench, the same benchmarks once per round) and prints, per case,
// warren's figures beside each baseline's: medians over the rounds, and
// warren's ratio to the baseline taken within each round, as median and
// min–max. scripts/bench pipes its rounds into it.
//
//	benchtable [file ...]
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// result is one benchmark line: its metrics by unit.
type result map[string]float64

// series holds, per case and side, the results of the rounds in order.
type series struct {
	cases []string                       // in order of first appearance
	sides map[string][]string            // case -> sides, in order of first appearance
	runs  map[string]map[string][]result // case -> side -> rounds
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

func parse(r io.Reader, s *series) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		i := strings.LastIndex(m[1], "/")
		if i < 0 {
			continue
		}
		name, side := m[1][:i], m[1][i+1:]
		fields := strings.Fields(m[2])
		res := result{}
		for j := 0; j+1 < len(fields); j += 2 {
			v, err := strconv.ParseFloat(fields[j], 64)
			if err != nil {
				return fmt.Errorf("%q: %w", sc.Text(), err)
			}
			res[fields[j+1]] = v
		}
		if s.runs[name] == nil {
			s.cases = append(s.cases, name)
			s.runs[name] = map[string][]result{}
		}
		if !slices.Contains(s.sides[name], side) {
			s.sides[name] = append(s.sides[name], side)
		}
		s.runs[name][side] = append(s.runs[name][side], res)
	}
	return sc.Err()
}

// stats returns the median, min and max of xs.
func stats(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// column returns one metric of every round.
func column(rs []result, unit string) []float64 {
	out := make([]float64, 0, len(rs))
	for _, r := range rs {
		out = append(out, r[unit])
	}
	return out
}

// ratios returns warren's metric over the baseline's, round by round.
func ratios(w, base []result, unit string) []float64 {
	var out []float64
	for i := range min(len(w), len(base)) {
		if base[i][unit] != 0 {
			out = append(out, w[i][unit]/base[i][unit])
		}
	}
	return out
}

func writeTable(w io.Writer, s *series) {
	fmt.Fprintln(w, "| case | baseline | rounds | msgs/s warren | msgs/s baseline | throughput ratio, median (min–max) | CPU µs/msg warren vs baseline | CPU ratio, median (min–max) | allocs/msg warren vs baseline |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range s.cases {
		wr := s.runs[c]["warren"]
		if wr == nil {
			continue
		}
		for _, side := range s.sides[c] {
			if side == "warren" {
				continue
			}
			br := s.runs[c][side]
			wm, _, _ := stats(column(wr, "msgs/s"))
			bm, _, _ := stats(column(br, "msgs/s"))
			tr, tlo, thi := stats(ratios(wr, br, "msgs/s"))
			wc, _, _ := stats(column(wr, "cpu-us/msg"))
			bc, _, _ := stats(column(br, "cpu-us/msg"))
			cr, clo, chi := stats(ratios(wr, br, "cpu-us/msg"))
			wa, _, _ := stats(column(wr, "allocs/op"))
			ba, _, _ := stats(column(br, "allocs/op"))
			fmt.Fprintf(w, "| %s | %s | %d | %.0f | %.0f | **%.2f** (%.2f–%.2f) | %.1f vs %.1f | %.2f (%.2f–%.2f) | %.0f vs %.0f |\n",
				strings.TrimPrefix(c, "Benchmark"), side, min(len(wr), len(br)), wm, bm, tr, tlo, thi, wc, bc, cr, clo, chi, wa, ba)
		}
	}
}

func main() {
	s := &series{sides: map[string][]string{}, runs: map[string]map[string][]result{}}
	files := os.Args[1:]
	if len(files) == 0 {
		if err := parse(os.Stdin, s); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err == nil {
			err = parse(r, s)
			r.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	writeTable(os.Stdout, s)
}
