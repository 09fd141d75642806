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
	sides map[string][]string            // case -> sides, sorted
	runs  map[string]map[string][]result // case -> side -> rounds

	header []string // the baselines of the table being written
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
			slices.Sort(s.sides[name]) // the order of a round varies; the table's does not
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

// writeTable prints one row per case: warren's throughput, its ratio to
// each baseline (per round: median and min–max), and CPU and allocations
// per message, warren's first, then each baseline's.
func writeTable(w io.Writer, s *series) {
	// Cases with the same baselines share a table, in order of appearance.
	cases := slices.Clone(s.cases)
	group := map[string]int{}
	for _, c := range cases {
		k := strings.Join(s.sides[c], ",")
		if _, ok := group[k]; !ok {
			group[k] = len(group)
		}
	}
	slices.SortStableFunc(cases, func(a, b string) int {
		return group[strings.Join(s.sides[a], ",")] - group[strings.Join(s.sides[b], ",")]
	})
	for _, c := range cases {
		wr := s.runs[c]["warren"]
		if wr == nil {
			continue
		}
		var bases []string
		for _, side := range s.sides[c] {
			if side != "warren" {
				bases = append(bases, side)
			}
		}
		if !slices.Equal(bases, s.header) {
			s.header = bases
			fmt.Fprintf(w, "\n| case | rounds | warren msgs/s |")
			for _, b := range bases {
				fmt.Fprintf(w, " vs %s |", b)
			}
			fmt.Fprintf(w, " CPU µs/msg: warren, %s | allocs/msg: warren, %s |\n", strings.Join(bases, ", "), strings.Join(bases, ", "))
			fmt.Fprintf(w, "|---|---:|---:|%s---:|---:|\n", strings.Repeat("---:|", len(bases)))
		}
		rounds := len(wr)
		wm, _, _ := stats(column(wr, "msgs/s"))
		cpu := []string{fmt.Sprintf("%.0f", median(column(wr, "cpu-us/msg")))}
		allocs := []string{fmt.Sprintf("%.0f", median(column(wr, "allocs/op")))}
		fmt.Fprintf(w, "| %s |", strings.TrimPrefix(c, "Benchmark"))
		var ratioCells []string
		for _, b := range bases {
			br := s.runs[c][b]
			rounds = min(rounds, len(br))
			tr, lo, hi := stats(ratios(wr, br, "msgs/s"))
			ratioCells = append(ratioCells, fmt.Sprintf(" **%.2f** (%.2f–%.2f) |", tr, lo, hi))
			cpu = append(cpu, fmt.Sprintf("%.0f", median(column(br, "cpu-us/msg"))))
			allocs = append(allocs, fmt.Sprintf("%.0f", median(column(br, "allocs/op"))))
		}
		fmt.Fprintf(w, " %d | %.0f |%s %s | %s |\n", rounds, wm, strings.Join(ratioCells, ""), strings.Join(cpu, ", "), strings.Join(allocs, ", "))
	}
}

func median(xs []float64) float64 {
	m, _, _ := stats(xs)
	return m
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
