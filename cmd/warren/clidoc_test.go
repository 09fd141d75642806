package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/lint"
	"github.com/warrenbus/warren/generator/schemadiff"
)

// cliDoc is the page that documents the commands and their rules, as
// messages name it. The tests below keep it in step with the code, which
// --help is built from: a rule or command added to the code and not to the
// page fails them.
const cliDoc = "docs/CLI.md"

// TestDocsListEveryDiffRule checks that the table under "Diff rules" in
// docs/CLI.md has one row per schemadiff rule, in the order of
// schemadiff.Rules, with the directions it can break and its doc line:
// the SARIF log and --format json name changes by these rules, and the
// page is where a reader looks them up.
func TestDocsListEveryDiffRule(t *testing.T) {
	var want []string
	for _, r := range schemadiff.Rules {
		breaks := r.Breaks.String()
		if r.Always {
			breaks += ", always"
		}
		want = append(want, fmt.Sprintf("| `%s` | %s | %s |", r.Name, breaks, r.Doc))
	}
	got := tableRows(t, docSection(t, "#### Diff rules"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the table under \"Diff rules\" is not schemadiff.Rules (-want +got):\n%s", cliDoc, diff)
	}
}

// TestDocsNameEveryCheckRule checks that the warren check section of
// docs/CLI.md names every lint rule, so that a finding's rule can be
// looked up there.
func TestDocsNameEveryCheckRule(t *testing.T) {
	section := strings.Join(docSection(t, "### warren check"), "\n")
	for _, r := range lint.Rules {
		if !strings.Contains(section, "`"+r.Name+"`") {
			t.Errorf("%s: the warren check section does not name rule `%s` (%s)", cliDoc, r.Name, r.Doc)
		}
	}
}

// TestDocsCommandTableListsEveryCommand checks the table at the top of
// docs/CLI.md against the commands warren registers (warren --help lists
// them): every command has a row, a row names no command that does not
// exist, and a row that lists a command's subcommands (`warren outbox
// status`, `failed`, ...) lists all of them.
func TestDocsCommandTableListsEveryCommand(t *testing.T) {
	registered := map[string][]string{} // command -> its subcommands
	for _, c := range commands {
		cmd := c()
		var subs []string
		for _, s := range cmd.Subcommands {
			subs = append(subs, s.Name)
		}
		registered[cmd.Name] = subs
	}
	documented := map[string]bool{}
	for _, row := range tableRows(t, docSection(t, "# Commands and exit codes")) {
		first, _, _ := strings.Cut(strings.TrimPrefix(row, "|"), "|")
		spans := codeSpan.FindAllStringSubmatch(first, -1)
		if len(spans) == 0 {
			t.Errorf("%s: command table row %s names no command in code", cliDoc, row)
			continue
		}
		words := strings.Fields(spans[0][1])
		if len(words) < 2 || words[0] != "warren" {
			t.Errorf("%s: command table row %s: expected it to start with `warren COMMAND`, got `%s`", cliDoc, row, spans[0][1])
			continue
		}
		name := words[1]
		subs, ok := registered[name]
		if !ok {
			t.Errorf("%s: command table row %s names warren %s, which is no command", cliDoc, row, name)
			continue
		}
		documented[name] = true
		var rest []string
		for _, sp := range spans[1:] {
			rest = append(rest, sp[1])
		}
		if len(words) == 2 {
			// `warren topology`, `declare`, ...: the others are commands too.
			for _, other := range rest {
				if _, ok := registered[other]; !ok {
					t.Errorf("%s: command table row %s names %s, which is no command", cliDoc, row, other)
				}
				documented[other] = true
			}
			continue
		}
		// `warren outbox status`, `failed`, ...: the others are subcommands.
		listed := append([]string{words[2]}, rest...)
		for _, sub := range subs {
			if !slices.Contains(listed, sub) {
				t.Errorf("%s: command table row %s lists subcommands of warren %s but not %s", cliDoc, row, name, sub)
			}
		}
		for _, sub := range listed {
			if !slices.Contains(subs, sub) {
				t.Errorf("%s: command table row %s names warren %s %s, which is no subcommand", cliDoc, row, name, sub)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		if !documented[name] {
			t.Errorf("%s: the command table at the top has no row for warren %s", cliDoc, name)
		}
	}
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// docSection returns the lines of docs/CLI.md from heading (a whole line,
// "### warren check") to the next heading of the same or a higher level.
func docSection(t *testing.T, heading string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(cliDoc)))
	if err != nil {
		t.Fatal(err)
	}
	level := strings.Index(heading, " ")
	var out []string
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		if in {
			if n := strings.Index(line, " "); n > 0 && n <= level && strings.Trim(line[:n], "#") == "" {
				break
			}
			out = append(out, line)
		} else if line == heading {
			in = true
		}
	}
	if !in {
		t.Fatalf("%s has no heading %q", cliDoc, heading)
	}
	return out
}

// tableRows returns the body rows of the first table in lines, each
// trimmed: the lines after its header and separator up to the first line
// that is not a row.
func tableRows(t *testing.T, lines []string) []string {
	t.Helper()
	start := -1
	for i, line := range lines {
		if strings.HasPrefix(line, "|---") {
			start = i + 1
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s: no table in the section", cliDoc)
	}
	var rows []string
	for _, line := range lines[start:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		rows = append(rows, strings.TrimSpace(line))
	}
	return rows
}
