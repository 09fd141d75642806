package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	docPath           = "../../docs/CONFORMANCE.md"
	disagreementsPath = "testdata/disagreements.txt"
	differentialPath  = "testdata/differential.txt"
	beginFigures      = "<!-- figures: written by go test ./generator/conformance -update -->"
	endFigures        = "<!-- end of figures -->"
)

// report compares the run with what the repository says: the figures in
// docs/CONFORMANCE.md and the cases listed as disagreeing. Either going
// stale fails the test; -update rewrites both.
func report(t *testing.T, groups []*group, results map[*group][]verdict) {
	figures, disagreements, differences := summarize(groups, results)
	if *update {
		writeFigures(t, figures)
		for path, lines := range map[string][]string{disagreementsPath: disagreements, differentialPath: differences} {
			// The header says what the file lists, so that a list with no
			// cases still reads as one.
			text := listHeader[path] + "\n" + strings.Join(lines, "\n") + "\n"
			if err := os.WriteFile(path, []byte(strings.TrimSuffix(text, "\n\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), beginFigures+"\n"+figures+endFigures) {
		t.Errorf("%s does not show this run's figures (go test ./generator/conformance -update); they are:\n%s", docPath, figures)
	}
	stale(t, disagreementsPath, disagreements, "new disagreement with the suite")
	stale(t, differentialPath, differences, "new difference between the generated decoding and the reference validator")
}

// listHeader is the first line of each list of cases; stale skips it.
var listHeader = map[string]string{
	disagreementsPath: "# Suite cases where warren's verdict differs from the suite's (go test ./generator/conformance -update rewrites this list).",
	differentialPath:  "# Suite cases where the generated decoding alone and the reference validator alone differ (go test ./generator/conformance -update rewrites this list).",
}

// stale compares a run's list of cases with the one in the repository.
func stale(t *testing.T, path string, got []string, what string) {
	known, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(known), "\n"), "\n")
	if len(want) == 0 || want[0] != listHeader[path] {
		t.Errorf("%s does not begin with its header line %q (go test ./generator/conformance -update)", path, listHeader[path])
	} else {
		want = want[1:]
	}
	for _, d := range got {
		if !slices.Contains(want, d) {
			t.Errorf("%s: %s", what, d)
		}
	}
	for _, d := range want {
		if d != "" && !slices.Contains(got, d) {
			t.Errorf("%s lists a case that no longer differs (go test ./generator/conformance -update): %s", path, d)
		}
	}
}

// summarize returns the figures table, the sorted list of cases that
// disagree with the suite, and the sorted list of cases on which the
// generated decoding alone and the reference validator alone differ.
func summarize(groups []*group, results map[*group][]verdict) (string, []string, []string) {
	type row struct{ groups, leftUpFront, notGenerated, generated, cases, agree, validCases, roundTrip, sameAsReference int }
	rows := map[string]*row{}
	var disagreements, differences []string
	type regexRow struct{ groups, notGenerated, cases, agree, generated, reference int }
	regexRows := map[string]*regexRow{}
	for _, g := range groups {
		if g.regex {
			r := regexRows[g.draft]
			if r == nil {
				r = &regexRow{}
				regexRows[g.draft] = r
			}
			r.groups++
			if g.leftOut != "" {
				r.notGenerated++
			}
		}
		r := rows[g.draft]
		if r == nil {
			r = &row{}
			rows[g.draft] = r
		}
		if !g.regex {
			r.groups++
		}
		switch {
		case g.regex && g.leftOut != "":
			continue
		case strings.HasPrefix(g.leftOut, "not generated"):
			r.notGenerated++
			continue
		case g.leftOut != "":
			r.leftUpFront++
			continue
		}
		if !g.regex {
			r.generated++
		}
		for i, c := range g.Tests {
			v := results[g][i]
			if rr := regexRows[g.draft]; g.regex {
				rr.cases++
				rr.agree += count(v.Accepted == c.Valid)
				rr.generated += count(v.Generated == c.Valid)
				rr.reference += count(v.Reference == c.Valid)
			} else {
				r.cases++
			}
			if v.Accepted == c.Valid {
				if !g.regex {
					r.agree++
				}
			} else {
				disagreements = append(disagreements, fmt.Sprintf("%s: %q: want valid=%v: %s", g.name(), c.Description, c.Valid, firstLine(v.Why)))
			}
			if v.Reference == v.Generated {
				if !g.regex {
					r.sameAsReference++
				}
			} else {
				differences = append(differences, fmt.Sprintf("%s: %q: reference accepts=%v, generated accepts=%v: %s", g.name(), c.Description, v.Reference, v.Generated, firstLine(v.GeneratedWhy)))
			}
			if c.Valid && v.Accepted && !g.regex {
				r.validCases++
				if v.RoundTrip {
					r.roundTrip++
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString("| draft | groups | left out (remote refs) | not generated | generated | cases | agree | accepted valid cases that round-trip exactly | generated decoding alone agrees with the reference validator |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, d := range drafts {
		r := rows[d.dir]
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d (%s) | %d of %d | %d (%s) |\n", d.draft, r.groups, r.leftUpFront, r.notGenerated, r.generated, r.cases, r.agree, percent(r.agree, r.cases), r.roundTrip, r.validCases, r.sameAsReference, percent(r.sameAsReference, r.cases))
	}
	b.WriteString("\nECMA-262 regular expressions: the groups of " + strings.Join(regexFiles, ", ") + " in each draft, and warren's own cases of lookaround, named groups and backreferences (" + ownRegexFile + ", under 2020-12). A case passes when it is accepted exactly when it is valid.\n\n")
	b.WriteString("| draft | groups | not generated | cases | pass (validate, then decode) | pass: generated decoding alone | pass: reference validator alone |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	dirs := []string{}
	for _, d := range drafts {
		dirs = append(dirs, d.dir)
	}
	for _, d := range append(dirs, ownRegexDraft) {
		r := regexRows[d]
		if r == nil {
			continue
		}
		label := "warren's cases"
		if d != ownRegexDraft {
			label = draftOfDir(d).String()
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d (%d fail) | %d (%d fail) | %d (%d fail) |\n", label, r.groups, r.notGenerated, r.cases, r.agree, r.cases-r.agree, r.generated, r.cases-r.generated, r.reference, r.cases-r.reference)
	}
	fmt.Fprintf(&b, "\nOf the %d types generated for the suite, %d check themselves in their generated code and %d validate with the embedded schema, which their generated code cannot follow exactly.\n", typesGenerated, typesGenerated-typesReferenced, typesReferenced)
	b.WriteString("\nGroups not generated, by the generator's reason:\n\n")
	reasons := map[string][]string{}
	for _, g := range groups {
		if msg, ok := strings.CutPrefix(g.leftOut, "not generated: "); ok {
			reasons[reasonKey(msg)] = append(reasons[reasonKey(msg)], g.draft+"/"+g.file)
		}
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		where := slices.Compact(reasons[k])
		fmt.Fprintf(&b, "- %s (%d groups: %s)\n", k, len(reasons[k]), strings.Join(where, ", "))
	}
	slices.Sort(disagreements)
	slices.Sort(differences)
	return b.String(), disagreements, differences
}

// reasonKey shortens a generator error to its kind, so that reasons group.
func reasonKey(msg string) string {
	msg = firstLine(msg)
	if i := strings.Index(msg, ": "); i > 0 && strings.HasPrefix(msg, "$ref ") {
		msg = "$ref" + msg[i:]
	}
	for _, cut := range []string{" (", "; "} {
		if i := strings.Index(msg, cut); i > 0 {
			msg = msg[:i]
		}
	}
	if len(msg) > 140 {
		msg = msg[:137] + "..."
	}
	return msg
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

func writeFigures(t *testing.T, figures string) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, beginFigures), strings.Index(s, endFigures)
	if i < 0 || j < i {
		t.Fatalf("%s has no %s ... %s block", docPath, beginFigures, endFigures)
	}
	s = s[:i] + beginFigures + "\n" + figures + s[j:]
	if err := os.WriteFile(filepath.Clean(docPath), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
