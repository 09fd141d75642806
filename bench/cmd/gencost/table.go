package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// record is one measurement line of rounds.txt:
//
//	generate facts=1000 side=warren round=1 wall=1.234 cpu=1.567 files=1006 lines=400123
//	build facts=100 side=warren round=1 wall=4.300 cpu=6.100
type record struct {
	kind  string // generate or build
	facts int
	side  string
	round int
	wall  float64 // seconds
	cpu   float64 // seconds
	files int
	lines int
}

// kept is what a rounds file holds.
type kept struct {
	versions   map[string]string
	records    []record
	unmeasured []string // the "# unmeasured ..." lines, without "# "
}

func parseRounds(r io.Reader) (kept, error) {
	k := kept{versions: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "# versions "); ok {
			for _, f := range strings.Fields(rest) {
				if side, v, ok := strings.Cut(f, "="); ok && v != "-" {
					k.versions[side] = v
				}
			}
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# unmeasured "); ok {
			k.unmeasured = append(k.unmeasured, rest)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || (fields[0] != "generate" && fields[0] != "build") {
			continue
		}
		rec := record{kind: fields[0]}
		for _, f := range fields[1:] {
			name, v, ok := strings.Cut(f, "=")
			if !ok {
				return k, fmt.Errorf("%q: field %q is not NAME=VALUE", line, f)
			}
			var err error
			switch name {
			case "side":
				rec.side = v
			case "facts":
				rec.facts, err = strconv.Atoi(v)
			case "round":
				rec.round, err = strconv.Atoi(v)
			case "files":
				rec.files, err = strconv.Atoi(v)
			case "lines":
				rec.lines, err = strconv.Atoi(v)
			case "wall":
				rec.wall, err = strconv.ParseFloat(v, 64)
			case "cpu":
				rec.cpu, err = strconv.ParseFloat(v, 64)
			}
			if err != nil {
				return k, fmt.Errorf("%q: %w", line, err)
			}
		}
		if rec.side == "" || rec.facts == 0 || rec.round == 0 {
			return k, fmt.Errorf("%q: want side, facts and round", line)
		}
		k.records = append(k.records, rec)
	}
	return k, sc.Err()
}

// printTable prints the table of the rounds files paths, their rounds
// pooled (numbered on from one file to the next), which must all measure
// the same versions.
func printTable(paths ...string) error {
	all, err := pool(paths...)
	if err != nil {
		return err
	}
	writeTable(os.Stdout, all)
	return nil
}

// pool reads the rounds files paths into one, numbering the rounds of each
// file on from those of the files before it.
func pool(paths ...string) (kept, error) {
	var all kept
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return all, err
		}
		k, err := parseRounds(f)
		f.Close()
		if err != nil {
			return all, fmt.Errorf("%s: %w", path, err)
		}
		if all.versions == nil {
			all.versions = k.versions
		} else if !maps.Equal(all.versions, k.versions) {
			return all, fmt.Errorf("%s measured %v, %s %v: pool only rounds of the same versions", path, k.versions, paths[0], all.versions)
		}
		offset := 0
		for _, r := range all.records {
			offset = max(offset, r.round)
		}
		for _, r := range k.records {
			r.round += offset
			all.records = append(all.records, r)
		}
		all.unmeasured = append(all.unmeasured, k.unmeasured...)
	}
	return all, nil
}

// writeTable writes, per figure, every side's median over the rounds with
// min–max, and warren's ratio to each peer, taken within each round
// (median, min–max).
func writeTable(w io.Writer, k kept) {
	var peers []string
	header := "| figure | rounds |"
	align := "|---|---:|"
	for _, s := range sides {
		header += " " + s
		if v := k.versions[s]; v != "" {
			header += " " + v
		}
		if s == "go-jsonschema" {
			header += " (types only)"
		}
		if s == "floor" {
			header += " (warren's files written, nothing computed)"
		}
		header += " |"
		align += "---:|"
		if s != "warren" {
			peers = append(peers, s)
		}
	}
	for _, p := range peers {
		header += " warren / " + p + " |"
		align += "---:|"
	}
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, align)

	facts := func(kind string) []int {
		var out []int
		for _, r := range k.records {
			if r.kind == kind && !slices.Contains(out, r.facts) {
				out = append(out, r.facts)
			}
		}
		slices.Sort(out)
		return out
	}
	// row writes one figure; ranged: give min–max even when the median
	// alone would do (times, not counts); ratios: give warren's ratios.
	row := func(label, kind string, n int, value func(record) float64, format func(float64) string, ranged, ratios bool) {
		by := map[string]map[int]float64{} // side -> round -> value
		for _, r := range k.records {
			if r.kind == kind && r.facts == n {
				if by[r.side] == nil {
					by[r.side] = map[int]float64{}
				}
				by[r.side][r.round] = value(r)
			}
		}
		rounds := 0
		for _, byRound := range by {
			rounds = max(rounds, len(byRound))
		}
		cells := []string{label, strconv.Itoa(rounds)}
		for _, s := range sides {
			cells = append(cells, cell(values(by[s]), format, ranged))
		}
		for _, p := range peers {
			var rs []float64
			for round, v := range by["warren"] {
				if pv, ok := by[p][round]; ok && pv > 0 && ratios {
					rs = append(rs, v/pv)
				}
			}
			cells = append(cells, cell(rs, ratio, ranged))
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
	wall := func(r record) float64 { return r.wall }
	cpu := func(r record) float64 { return r.cpu }
	for _, n := range facts("build") {
		row(fmt.Sprintf("`go build` of the generated package, %s facts: wall", thousands(n)), "build", n, wall, seconds, true, true)
		row(fmt.Sprintf("`go build`, %s facts: CPU (user+sys, go and compiler)", thousands(n)), "build", n, cpu, seconds, true, true)
	}
	for _, n := range facts("generate") {
		row(fmt.Sprintf("generated lines per fact, %s facts (all .go files)", thousands(n)), "generate", n,
			func(r record) float64 { return float64(r.lines) / float64(r.facts) }, integer, false, true)
		row(fmt.Sprintf("generated .go files, %s facts", thousands(n)), "generate", n,
			func(r record) float64 { return float64(r.files) }, integer, false, false)
	}
	for _, n := range facts("generate") {
		row(fmt.Sprintf("generation, %s facts, whole process: wall", thousands(n)), "generate", n, wall, seconds, true, true)
		row(fmt.Sprintf("generation, %s facts: CPU (user+sys)", thousands(n)), "generate", n, cpu, seconds, true, true)
	}
	fmt.Fprintln(w, "\nMedians over the rounds, min–max in brackets; ratios are taken within each round.")
	for _, u := range k.unmeasured {
		fmt.Fprintf(w, "Not measured: %s\n", u)
	}
}

func values(byRound map[int]float64) []float64 {
	var out []float64
	for _, v := range byRound {
		out = append(out, v)
	}
	return out
}

// cell is the median of xs and, when ranged and the values differ, their
// min–max; "—" when there is none.
func cell(xs []float64, format func(float64) string, ranged bool) string {
	if len(xs) == 0 {
		return "—"
	}
	med, lo, hi := stats(xs)
	s := format(med)
	if l, h := format(lo), format(hi); (ranged || l != h) && len(xs) > 1 {
		s += " (" + strings.TrimSuffix(l, " s") + "–" + h + ")"
	}
	return s
}

// stats returns the median, min and max of xs.
func stats(xs []float64) (med, lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

func seconds(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " s"
}

func ratio(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func integer(v float64) string { return thousands(int(v + 0.5)) }

// thousands writes n with a comma between thousands: 1,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
